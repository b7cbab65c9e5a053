// The real E2B SDK (npm e2b@2.51.0) against a live stockaded (run by test_e2b.py, which sets
// E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY and E2B_QUOTA_KEY). Each step prints one JSON line
// {"step": ..., ...} with what the SDK observed; test_e2b.py checks them. Exit 0 when every
// step ran (the checks are the harness's), 1 on an unexpected throw.
import { Sandbox, CommandExitError, RateLimitError, SandboxNotFoundError, Template, TimeoutError } from 'e2b'

import { now, report, sleep, expectThrow } from './e2b_steps.mjs'

async function waitUntil(cond, ms) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await cond()) return true
    await sleep(500)
  }
  return false
}

// 0. the key as the daemon issued it, with the SDKs' client-side check on (issue 28): newer
// SDKs refuse anything but /^e2b_[0-9a-f]+$/ (packages/js-sdk/src/api/index.ts,
// validateApiKey(); the Python SDK the same) unless E2B_VALIDATE_API_KEY=false.
report('apiKey', { validate: process.env.E2B_VALIDATE_API_KEY ?? null,
  sdkShape: /^e2b_[0-9a-f]+$/.test(process.env.E2B_API_KEY) })

// 1. create (v2), with metadata and envs
let c0 = now()
const sbx = await Sandbox.create({ metadata: { suite: 'e2b-it' }, envs: { GREETING: 'hej' } })
report('create', { id: sbx.sandboxId, seconds: now() - c0, running: await sbx.isRunning() })

// 2. commands.run: python printing 5 lines, streamed as printed, shown by causality (issue 31):
// the program prints line i, then waits for a file go-<i> that onStdout writes (files.write)
// once line i has reached it. Output held back until the end, or batched, leaves the program
// waiting for a file that never comes, and it exits 4.
await sbx.files.write('stepped.py', 'import os, sys, time\n' +
  'for i in range(5):\n' +
  '    print(f"line {i}", flush=True)\n' +
  '    t = time.monotonic()\n' +
  '    while not os.path.exists(f"go-{i}"):\n' +
  '        if time.monotonic() - t > 120:\n' +
  '            sys.exit(f"the client never saw line {i} while the program ran")\n' +
  '        time.sleep(0.05)\n')
const lines = []
const acks = []
c0 = now()
const r = await sbx.commands.run('echo "$GREETING from $(pwd)"; python3 stepped.py', {
  onStdout: (d) => {
    lines.push({ t: now() - c0, d })
    for (const m of d.matchAll(/line (\d+)/g)) acks.push(sbx.files.write(`go-${m[1]}`, 'go'))
  },
})
await Promise.all(acks)
report('run', { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, lines, total: now() - c0 })

// 3. a non-zero exit and stderr
const ex = await expectThrow(() => sbx.commands.run('echo oops >&2; exit 3'))
report('exit', { threw: ex.threw, isExit: ex.e instanceof CommandExitError, exitCode: ex.e?.exitCode, stderr: ex.e?.stderr })

// 4. files.write / files.read round trip, through /home/user (an alias of the workspace)
const text = 'hello from the SDK\nsecond line ✓\n'
const w = await sbx.files.write('/home/user/dir/sub/greeting.txt', text)
const back = await sbx.files.read('/home/user/dir/sub/greeting.txt')
const bytes = new Uint8Array(256).map((_, i) => i)
await sbx.files.write('data.bin', bytes.buffer)
const bytesBack = await sbx.files.read('data.bin', { format: 'bytes' })
const catOut = await sbx.commands.run('cat /home/user/dir/sub/greeting.txt && ls /workspace/dir/sub')
const listing = (await sbx.files.list('/home/user/dir')).map((e) => ({ name: e.name, type: e.type, path: e.path }))
const exists = [await sbx.files.exists('/home/user/dir/sub/greeting.txt'), await sbx.files.exists('nope.txt')]
const missing = await expectThrow(() => sbx.files.read('/home/user/nope.txt'))
report('files', {
  write: w, same: back === text, bytesSame: bytesBack.length === 256 && bytesBack.every((b, i) => b === i),
  cat: catOut.stdout, listing, exists, missing: { threw: missing.threw, name: missing.name },
})

// 5. filesystem calls: makeDir, rename, getInfo, remove
const made = [await sbx.files.makeDir('/home/user/made'), await sbx.files.makeDir('/home/user/made')]
const renamed = await sbx.files.rename('/home/user/dir/sub/greeting.txt', '/home/user/made/moved.txt')
const info = await sbx.files.getInfo('/home/user/made/moved.txt')
await sbx.files.remove('/home/user/made')
report('fs', { made, renamed: renamed.path, size: info.size, type: info.type, gone: !(await sbx.files.exists('/home/user/made')) })

// 5b. users (issue 28): user 'root' on commands and files, else the session's user; pwd is
// E2B's home, /home/user, as a real path (os.getcwd() too, not only the shell's $PWD)
const asUser = await sbx.commands.run('id -u')
const asRoot = await sbx.commands.run('id -u', { user: 'root' })
await sbx.files.write('/home/user/by-root.txt', 'root was here\n', { user: 'root' })
const owner = await sbx.commands.run('stat -c %u:%g by-root.txt')
const rootRead = await sbx.files.read('/home/user/by-root.txt', { user: 'root' })
const cwd = await sbx.commands.run('python3 -c "import os; print(os.getcwd())"; cd ~ && pwd')
report('users', { user: asUser.stdout, root: asRoot.stdout, owner: owner.stdout, rootRead,
  cwd: cwd.stdout })

// 5c. what E2B's base template carries and agents run all day (issue 33): git, curl and the CA
// certificates that HTTPS verifies against (Python's default context loads them)
const ident = '-c user.name=agent -c user.email=agent@example.invalid'
const gitRun = await sbx.commands.run(`git init -q repo && cd repo && git ${ident} commit -q --allow-empty -m first && ` +
  `echo tracked > f && git add f && git ${ident} commit -q -m second && git log --format=%s && git status --porcelain | wc -l`)
const curlRun = await sbx.commands.run('curl -sS file:///home/user/repo/f && curl --version | head -n 1')
const caRun = await sbx.commands.run('python3 -c "import ssl; print(len(ssl.create_default_context().get_ca_certs()))"')
report('tools', { git: gitRun.stdout, curl: curlRun.stdout, caCerts: Number(caRun.stdout) })

// 6. a command killed by its timeout
c0 = now()
const to = await expectThrow(() => sbx.commands.run('sleep 30; echo never', { timeoutMs: 3000 }))
const killedSeconds = now() - c0
const gone = await waitUntil(async () => (await sbx.commands.list()).every((p) => !p.args.join(' ').includes('sleep 30')), 20000)
report('timeout', { threw: to.threw, isTimeout: to.e instanceof TimeoutError, name: to.name, message: to.message, seconds: killedSeconds, gone })

// 7. background command, stdin, list, connect, kill
const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'through stdin\n')
await sbx.commands.closeStdin(cat.pid)
const catResult = await cat.wait()
const bg = await sbx.commands.run('sleep 60', { background: true })
const listed = (await sbx.commands.list()).map((p) => p.pid)
const again = await sbx.commands.connect(bg.pid)
const killed = await sbx.commands.kill(bg.pid)
const afterKill = await expectThrow(() => again.wait())
report('background', { stdin: catResult.stdout, listed, bgPid: bg.pid, killed, afterKill: { threw: afterKill.threw, name: afterKill.name } })

// a terminal (issue 28): bash on a PTY answers a command, its size and a resize; kill ends it.
// Each answer is looked for after the question, and never appears in its echo.
{
  let screen = ''
  const dec = new TextDecoder()
  const enc = new TextEncoder()
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += dec.decode(d, { stream: true }) } })
  const answered = async (input, needle) => {
    const from = screen.length
    await sbx.pty.sendInput(term.pid, enc.encode(input))
    return await waitUntil(async () => screen.indexOf(needle, from) >= 0, 120000)
  }
  const fortyTwo = await answered('echo $((6*7))\n', '42')
  const size = await answered('stty size\n', '24 80')
  await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
  const resized = await answered('stty size\n', '30 100')
  const tty = await answered('tty\n', '/dev/pts/')
  const killed = await sbx.pty.kill(term.pid)
  const end = await expectThrow(() => term.wait())
  report('pty', { fortyTwo, size, resized, tty, killed, endThrew: end.threw, screen: screen.slice(-400) })
}

// 8. control plane: list (with a metadata filter), connect, setTimeout, getInfo
const page = await Sandbox.list({ query: { metadata: { suite: 'e2b-it' } } }).nextItems()
const same = await Sandbox.connect(sbx.sandboxId)
const viaConnect = await same.commands.run('echo connected')
await sbx.setTimeout(120_000)
const detail = await sbx.getInfo()
report('control', {
  listed: page.map((s) => s.sandboxId), connected: viaConnect.stdout,
  endInSeconds: (detail.endAt - Date.now()) / 1000, metadata: detail.metadata, state: detail.state,
})

// 8b. wire details as E2B's own servers answer them (issue 33): a symlink's getInfo (envd
// resolves it: the destination's type and mode, its absolute path), WatchDir of a missing
// path and of a file, an expired signed URL, fork of an unknown sandbox, Template.exists()
await sbx.commands.run('mkdir -p lnk/d && chmod 750 lnk/d && printf abc > lnk/t.txt && ' +
  'chmod 640 lnk/t.txt && ln -s t.txt lnk/l && ln -s /home/user/lnk/d lnk/ld && ln -s nowhere lnk/dangling && ' +
  'ln -s /proc/self/fd/1 lnk/magic && ln -s /tmp lnk/tmp')
const pick = (i) => ({ type: i.type ?? null, mode: i.mode, permissions: i.permissions, symlinkTarget: i.symlinkTarget ?? null })
const links = {
  file: pick(await sbx.files.getInfo('/home/user/lnk/l')),
  dir: pick(await sbx.files.getInfo('/home/user/lnk/ld')),
  dangling: pick(await sbx.files.getInfo('/home/user/lnk/dangling')),
  // resolved by the runner (root, PID 1): its own descriptors must stay unnamed
  magic: pick(await sbx.files.getInfo('/home/user/lnk/magic')),
  // outside the workspace, sticky (1777): envd's mode is os.FileMode.Perm()
  tmp: pick(await sbx.files.getInfo('/home/user/lnk/tmp')),
}
const watchMissing = await expectThrow(() => sbx.files.watchDir('/home/user/no-such-dir', () => {}))
const watchFile = await expectThrow(() => sbx.files.watchDir('/home/user/lnk/t.txt', () => {}))
const expiredUrl = await sbx.downloadUrl('/home/user/lnk/t.txt', { useSignatureExpiration: -60 })
const expiredRes = await fetch(expiredUrl, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
const forkRes = await fetch(`${process.env.E2B_API_URL}/sandboxes/${'a'.repeat(26)}/fork`, {
  method: 'POST', headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
  body: JSON.stringify({ timeout: 30 }),
})
const aliasRes = await fetch(`${process.env.E2B_API_URL}/templates/aliases/nonexistent-alias`, {
  headers: { 'X-API-KEY': process.env.E2B_API_KEY },
})
report('wire', {
  links,
  watchMissing: { threw: watchMissing.threw, name: watchMissing.name, message: watchMissing.message },
  watchFile: { threw: watchFile.threw, name: watchFile.name, message: watchFile.message },
  expired: { status: expiredRes.status, body: await expiredRes.json().catch(() => null) },
  fork: { status: forkRes.status, body: await forkRes.json().catch(() => null) },
  exists: [await Template.exists('base'), await Template.exists('nonexistent-alias')],
  alias: { status: aliasRes.status, body: await aliasRes.json().catch(() => null) },
})

// 9. kill: the sandbox is gone for the API and for envd
const killedOnce = await sbx.kill()
const killedTwice = await Sandbox.kill(sbx.sandboxId)
const runningAfter = await sbx.isRunning()
const infoAfter = await expectThrow(() => sbx.getInfo())
const runAfter = await expectThrow(() => sbx.commands.run('echo late'))
report('kill', {
  killedOnce, killedTwice, runningAfter, infoAfter: { threw: infoAfter.threw, notFound: infoAfter.e instanceof SandboxNotFoundError },
  runAfter: { threw: runAfter.threw, name: runAfter.name, message: runAfter.message },
})

// 10. a sandbox that expires by its timeoutMs, with a command streaming when it does
c0 = now()
const short = await Sandbox.create({ timeoutMs: 10_000 })
const created = now() - c0
const streaming = expectThrow(() => short.commands.run('while true; do echo tick; sleep 1; done', { timeoutMs: 0 }))
const expired = await waitUntil(async () => !(await short.isRunning()), 60_000)
const expiredAfter = now() - c0 - created
const streamEnd = await streaming
const expInfo = await expectThrow(() => short.getInfo())
report('expire', {
  created, expired, expiredAfter, stream: { threw: streamEnd.threw, name: streamEnd.name, message: streamEnd.message },
  infoNotFound: expInfo.e instanceof SandboxNotFoundError,
})

// 10b. a sandbox killed while a command streams: E2B's stream just breaks (the VM is gone), and
// the SDK says the sandbox was killed (issue 33)
const doomed = await Sandbox.create()
let ticked
const firstTick = new Promise((r) => { ticked = r })
const doomedRun = expectThrow(() => doomed.commands.run('while true; do echo tick; sleep 1; done',
  { timeoutMs: 0, onStdout: () => ticked() }))
await firstTick
await doomed.kill()
const doomedEnd = await doomedRun
report('killed', { threw: doomedEnd.threw, isTimeout: doomedEnd.e instanceof TimeoutError, message: doomedEnd.message })

// 11. a quota refusal: a tenant allowed no sandbox at all
const q = await expectThrow(() => Sandbox.create({ apiKey: process.env.E2B_QUOTA_KEY }))
report('quota', { threw: q.threw, isRateLimit: q.e instanceof RateLimitError, name: q.name, message: q.message })
