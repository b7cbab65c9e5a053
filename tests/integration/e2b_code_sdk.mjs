// The real E2B Code Interpreter SDK (npm @e2b/code-interpreter@2.8.0) against a live stockaded
// with a data pool (run by test_e2b_code.py, which sets E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY). Each step prints one JSON line {"step": ..., ...} with what the SDK observed;
// test_e2b_code.py checks them. Exit 0 when every step ran (the checks are the harness's), 1
// on an unexpected throw.
import { Sandbox, NotFoundError, SandboxError, TimeoutError } from '@e2b/code-interpreter'

import { now, report, expectThrow } from './e2b_steps.mjs'

// Guests run under TCG here: a cell (the first one starts the kernel) may take long.
const SLOW = { timeoutMs: 600_000, requestTimeoutMs: 600_000 }

const summary = (x) => ({
  text: x.text ?? null,
  error: x.error ? { name: x.error.name, value: x.error.value, traceback: x.error.traceback } : null,
  results: x.results.map((r) => ({ main: r.isMainResult, formats: r.formats(), text: r.text ?? null })),
  stdout: x.logs.stdout,
  count: x.executionCount ?? null,
})

// 1. create: the SDK's default template, code-interpreter-v1 (the data pool)
let c0 = now()
const sbx = await Sandbox.create({ timeoutMs: 1_800_000, requestTimeoutMs: 300_000 })
report('create', { id: sbx.sandboxId, seconds: now() - c0 })

// 2. state across runs of the default context
c0 = now()
const a = await sbx.runCode('x = 41', SLOW)
const firstSeconds = now() - c0
const b = await sbx.runCode('x + 1', SLOW)
report('state', { a: summary(a), b: summary(b), firstSeconds })

// 3. print lines reach onStdout as printed, not at the end, shown by causality (issue 31): the
// cell prints 'one', then waits for a file onStdout writes once 'one' has reached it, then
// prints 'two'. Output held back until the cell ends leaves it waiting, and it raises.
const lines = []
const acks = []
c0 = now()
const p = await sbx.runCode("import os, time\nprint('one', flush=True)\nt = time.monotonic()\n" +
  "while not os.path.exists('go-code'):\n" +
  "    if time.monotonic() - t > 120: raise RuntimeError('the client never saw one')\n" +
  "    time.sleep(0.05)\nprint('two')", {
  ...SLOW,
  onStdout: (m) => {
    lines.push({ t: now() - c0, line: m.line })
    if (m.line.startsWith('one')) acks.push(sbx.files.write('go-code', 'go'))
  },
})
await Promise.all(acks)
report('stdout', { lines, total: now() - c0, run: summary(p) })

// 4. a matplotlib figure: png (base64, opaque); a DataFrame: html
const fig = await sbx.runCode(
  "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()", SLOW)
const png = fig.results.find((r) => r.png)?.png
report('plot', {
  run: summary(fig),
  pngMagic: png ? Buffer.from(png, 'base64').subarray(0, 8).toString('hex') : null,
  pngBytes: png ? Buffer.from(png, 'base64').length : 0,
})
const df = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})", SLOW)
report('dataframe', { run: summary(df), html: df.results.find((r) => r.isMainResult)?.html ?? null })

// 5. an exception
const z = await sbx.runCode('1/0', SLOW)
report('error', { run: summary(z) })

// 6. a cell that never ends, given up by the SDK's timeoutMs: the cell is interrupted and the
// context (with x) stays usable
c0 = now()
const loop = await expectThrow(() => sbx.runCode('while True:\n    pass', { timeoutMs: 8000 }))
const loopSeconds = now() - c0
c0 = now()
// 120 s: far beyond a cell in a running kernel, short of waiting out a loop nobody stopped
const after = await expectThrow(() => sbx.runCode('x', { timeoutMs: 120_000 }))
report('timeout', {
  threw: loop.threw, isTimeout: loop.e instanceof TimeoutError, name: loop.name, message: loop.message,
  seconds: loopSeconds, afterSeconds: now() - c0,
  after: after.threw ? { text: null, error: { name: after.name, value: after.message } } : summary(after.value),
})

// 7. a second context: its own globals; restart clears them; delete removes it
const ctx = await sbx.createCodeContext({ cwd: '/home/user' })
const noX = await sbx.runCode('x', { ...SLOW, context: ctx })
await sbx.runCode("y = 'two'", { ...SLOW, context: ctx })
const hasY = await sbx.runCode('y', { ...SLOW, context: ctx })
const defaultNoY = await sbx.runCode('y', SLOW)
const listed = await sbx.listCodeContexts()
await sbx.restartCodeContext(ctx)
const restarted = await sbx.runCode('y', { ...SLOW, context: ctx })
await sbx.removeCodeContext(ctx.id)
const listedAfter = await sbx.listCodeContexts()
const deleted = await expectThrow(() => sbx.runCode('1', { ...SLOW, context: ctx }))
report('contexts', {
  ctx, noX: summary(noX), hasY: summary(hasY), defaultNoY: summary(defaultNoY), listed,
  restarted: summary(restarted), listedAfter,
  deleted: { threw: deleted.threw, isNotFound: deleted.e instanceof NotFoundError, message: deleted.message },
})

// 7b. javascript and bash, as E2B's template serves them (issue 33; the cells of E2B's own
// defaultKernels, cwd and env_vars tests): each language's default context, in /home/user
const JS = { ...SLOW, language: 'js' }
const BASH = { ...SLOW, language: 'bash' }
const jsHello = await sbx.runCode('console.log("Hello World!")', JS)
const jsImport = await sbx.runCode(`
    import { readFileSync } from 'fs'
    console.log(typeof readFileSync)
    `, JS)
const jsAwait = await sbx.runCode(`
    await Promise.resolve('Hello World!')
    `, JS)
await sbx.runCode('const n = 41; function inc(v) { return v + 1 }', JS)
const jsState = await sbx.runCode('const again = inc(n); again', { ...SLOW, language: 'javascript' })
const jsRedeclare = await sbx.runCode('const n = 1; n', JS)
const jsCwd = await sbx.runCode('process.cwd()', JS)
const jsEnv = await sbx.runCode('process.env.FOO', { ...JS, envs: { FOO: 'bar' } })
const jsEnvAfter = await sbx.runCode("process.env.FOO || 'default'", JS)
const jsError = await sbx.runCode('\nnull.x', JS)
const jsOwn = await sbx.createCodeContext({ language: 'javascript' })
const jsOwnRun = await sbx.runCode('typeof n', { ...SLOW, context: jsOwn })
const bashEnv = await sbx.runCode('echo $FOO', { ...BASH, envs: { FOO: 'bar' } })
const bashEnvAfter = await sbx.runCode('echo ${FOO:-default}; cd /tmp && X=5', BASH)
const bashState = await sbx.runCode('pwd; echo $X', BASH)
const pyBang = await sbx.runCode('!pwd', SLOW)
const ts = await expectThrow(() => sbx.runCode('const m: string = "x"', { ...SLOW, language: 'ts' }))
const langsListed = (await sbx.listCodeContexts()).map((c) => ({ language: c.language, cwd: c.cwd }))
report('languages', {
  jsHello: summary(jsHello), jsImport: summary(jsImport), jsAwait: summary(jsAwait),
  jsState: summary(jsState), jsRedeclare: summary(jsRedeclare), jsCwd: summary(jsCwd),
  jsEnv: summary(jsEnv), jsEnvAfter: summary(jsEnvAfter), jsError: summary(jsError),
  jsOwn, jsOwnRun: summary(jsOwnRun),
  bashEnv: summary(bashEnv), bashEnvAfter: summary(bashEnvAfter), bashState: summary(bashState),
  pyBang: summary(pyBang), ts: { threw: ts.threw, message: ts.message }, langsListed,
})

// 8. a cell writing result lines nested 2 040 and 65 deep to the kernel's protocol file
// (STOCKADE_DEEP_CELL, from test_e2b_code.py): the run ends normally, only the value at the
// bound (64) comes back, and the context still has x
const depthOf = (v) => (v !== null && typeof v === 'object'
  ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0)
const deep = await sbx.runCode(process.env.STOCKADE_DEEP_CELL, SLOW)
const deepAfter = await sbx.runCode('x', SLOW)
report('deep', {
  run: summary(deep),
  jsonDepths: deep.results.filter((r) => r.json !== undefined).map((r) => depthOf(r.json)),
  after: summary(deepAfter),
})

// 9. refusals: another language; a call without the sandbox's token
const lang = await expectThrow(() => sbx.runCode('1', { language: 'r' }))
const url = `${process.env.E2B_SANDBOX_URL}/execute`
const headers = { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' }
const noToken = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ code: '1' }) })
const badToken = await fetch(url, {
  method: 'POST', headers: { ...headers, 'X-Access-Token': 'x'.repeat(64) }, body: JSON.stringify({ code: '1' }),
})
report('refusals', {
  lang: { threw: lang.threw, isSandboxError: lang.e instanceof SandboxError, message: lang.message },
  noToken: noToken.status, badToken: badToken.status,
})

// 9b. /execute spoken directly, as the Python SDK reads it (issue 28): every stdout/stderr line
// carries an integer `timestamp` (OutputMessage(data["text"], data["timestamp"], ...) in
// python/e2b_code_interpreter/models.py raises KeyError without it), Unix epoch in ns
const sentNs = BigInt(Date.now()) * 1_000_000n
const raw = await fetch(url, {
  method: 'POST', headers: { ...headers, 'X-Access-Token': sbx.envdAccessToken },
  body: JSON.stringify({ code: "import sys\nprint('out', flush=True)\nprint('err', file=sys.stderr, flush=True)" }),
})
const rawText = await raw.text()
const doneNs = BigInt(Date.now()) * 1_000_000n
// the timestamp as sent (a JS number would round ns): its digits from the line itself
const rawLines = rawText.split('\n').filter((l) => l).map((l) => {
  const m = /"timestamp":\s*(-?[0-9]+)(?=[,}])/.exec(l)
  const o = JSON.parse(l)
  return { type: o.type, text: o.text ?? null, tsType: typeof o.timestamp, ts: m ? m[1] : null }
})
report('rawExecute', {
  status: raw.status,
  lines: rawLines,
  within: rawLines.filter((l) => l.type === 'stdout' || l.type === 'stderr')
    .map((l) => l.ts !== null && BigInt(l.ts) >= sentNs - 1_000_000_000n && BigInt(l.ts) <= doneNs + 1_000_000_000n),
})

// 10. the sandbox killed while a cell runs: E2B's stream just breaks (the VM is gone), and the
// SDK rejects with its "sandbox was killed" TimeoutError (issue 33)
let ticked
const firstTick = new Promise((r) => { ticked = r })
const doomed = expectThrow(() => sbx.runCode('import time\nwhile True:\n    print("tick", flush=True)\n    time.sleep(1)',
  { ...SLOW, onStdout: () => ticked() }))
await firstTick
await sbx.kill()
const killed = await doomed
report('killed', { threw: killed.threw, isTimeout: killed.e instanceof TimeoutError, message: killed.message })
report('done', {})
// runCode leaves its requestTimeoutMs timer armed when the answer is an error (the 404
// above): without this, node would wait it out before exiting.
process.exit(0)
