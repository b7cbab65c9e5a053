// Stockade's JavaScript code kernel: one stateful Node.js interpreter per code context whose
// language is "javascript" (issue 33; the Python kernel, kernel.py, is the model: read its
// header for the line protocol, which this one speaks unchanged).
//
// The host starts it as `sh -c 'exec 3>&1 1>&2; exec node kernel.js'`: the protocol leaves on
// fd 3 (the exec's stdout), and fd 1 is the exec's stderr, so a child process that writes to
// its inherited stdout cannot corrupt the protocol (the host attributes the exec's stderr to
// the running cell). A cell's console.log and process.stdout.write become the run's "stdout".
//
// A cell is read as E2B's JavaScript kernel reads one: top-level await, `import` declarations
// (served by require(), or import() for an ES module), and declarations that persist from one
// cell to the next and may be declared again (`const x` in two cells, as in a notebook). To do
// that the cell is parsed (acorn, which Debian's nodejs itself depends on) and rewritten:
// every top-level declaration becomes a global (var), its initialiser an assignment, and the
// cell's statements the body of an async function whose value is the last expression
// statement's. The value, when not undefined, is the run's result: text/plain by
// util.inspect (a string as '...', which E2B's server shows without the quotes). SIGINT
// (the host's interrupt) and the run's timeout stop a cell's synchronous part (vm's
// breakOnSigint and timeout) and abandon its pending promise; the context keeps its globals.
// Everything here is the workload's side: the host trusts none of it.
'use strict'

const fs = require('fs')
const path = require('path')
const readline = require('readline')
const util = require('util')
const vm = require('vm')
const { createRequire } = require('module')
const acorn = require('acorn')

const PROTO_FD = 3
const TEXT_MAX = 1 << 20 // one message's text; the host caps again
const stringify = JSON.stringify // a cell may replace the global JSON
const hasOwn = Object.prototype.hasOwnProperty

function send(msg) {
  const buf = Buffer.from(stringify(msg) + '\n', 'utf8')
  for (let off = 0; off < buf.length;) {
    try {
      off += fs.writeSync(PROTO_FD, buf, off)
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e
    }
  }
}

let current = 0 // the run being served (output after it ends goes to the last one)
let executionCount = 0

function emit(stream, chunk, encoding) {
  let text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(encoding || 'utf8')
  while (text.length > 0) {
    send({ run: current, type: stream, text: text.slice(0, TEXT_MAX) })
    text = text.slice(TEXT_MAX)
  }
}

function writer(stream) {
  return (chunk, encoding, cb) => {
    if (typeof encoding === 'function') cb = encoding
    emit(stream, chunk, typeof encoding === 'string' ? encoding : undefined)
    if (typeof cb === 'function') process.nextTick(cb)
    return true
  }
}
process.stdout.write = writer('stdout')
process.stderr.write = writer('stderr')
globalThis.console = new console.Console({ stdout: process.stdout, stderr: process.stderr })

// A cell's require resolves from the context's working directory, as node run there would.
const cellRequire = createRequire(path.join(process.cwd(), '[cell]'))
globalThis.require = cellRequire
globalThis.module = { exports: {}, require: cellRequire }
globalThis.exports = globalThis.module.exports

async function stockadeImport(spec) {
  try {
    return cellRequire(spec)
  } catch (e) {
    if (e.code !== 'ERR_REQUIRE_ESM') throw e
    return import(cellRequire.resolve(spec))
  }
}
Object.defineProperty(globalThis, '__stockadeImport', { value: stockadeImport })

// ------------------------------------------------------------------ the cell rewrite

function patternNames(p, out) {
  switch (p.type) {
    case 'Identifier': out.push(p.name); break
    case 'ObjectPattern': for (const q of p.properties) patternNames(q.type === 'RestElement' ? q.argument : q.value, out); break
    case 'ArrayPattern': for (const q of p.elements) if (q) patternNames(q, out); break
    case 'RestElement': patternNames(p.argument, out); break
    case 'AssignmentPattern': patternNames(p.left, out); break
  }
  return out
}

function importSpec(src, node) {
  const from = `await __stockadeImport(${src(node.source)})`
  const parts = []
  for (const s of node.specifiers) {
    if (s.type === 'ImportNamespaceSpecifier') parts.push(`${s.local.name} = ${from};`)
    else if (s.type === 'ImportDefaultSpecifier') parts.push(`${s.local.name} = ((m) => m && m.__esModule || m[Symbol.toStringTag] === 'Module' ? m.default : m)(${from});`)
    else parts.push(`${s.local.name} = (${from})[${stringify(s.imported.name || s.imported.value)}];`)
  }
  return parts.length ? parts.join(' ') : `${from};`
}

// The cell as a script: `var <its top-level names>; (async () => {<the cell, rewritten in
// place>})()`, on the cell's own line numbers (what comes before it is on its first line), so
// a traceback's <cell N>:line is the cell's line. Function declarations stay declarations
// (hoisted in the async function as they were in the cell) and are copied to their globals
// before the first statement runs.
function rewrite(code) {
  const ast = acorn.parse(code, {
    ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true,
    allowImportExportEverywhere: true, allowHashBang: true, locations: true,
  })
  const src = (n) => code.slice(n.start, n.end)
  const names = []
  const functions = []
  const edits = [] // [start, end, text], in order
  ast.body.forEach((st, i) => {
    let decl = st
    if (st.type === 'ExportNamedDeclaration' && st.declaration) decl = st.declaration
    else if (/^Export/.test(st.type)) throw located(new SyntaxError('export has no meaning in a cell'), st)
    if (decl.type === 'VariableDeclaration') {
      for (const d of decl.declarations) patternNames(d.id, names)
      edits.push([st.start, st.end, decl.declarations.map((d) => `(${src(d.id)} = ${d.init ? src(d.init) : 'undefined'})`).join(', ') + ';'])
    } else if (decl.type === 'FunctionDeclaration') {
      names.push(decl.id.name)
      functions.push(decl.id.name)
      if (decl !== st) edits.push([st.start, st.end, src(decl)])
    } else if (decl.type === 'ClassDeclaration') {
      names.push(decl.id.name)
      edits.push([st.start, st.end, `${decl.id.name} = ${src(decl)};`])
    } else if (st.type === 'ImportDeclaration') {
      for (const s of st.specifiers) names.push(s.local.name)
      edits.push([st.start, st.end, importSpec(src, st)])
    } else if (i === ast.body.length - 1 && st.type === 'ExpressionStatement') {
      edits.push([st.start, st.end, `return (${src(st.expression)});`])
    }
  })
  let out = ''
  let at = 0
  for (const [a, b, text] of edits) {
    out += code.slice(at, a) + text
    at = b
  }
  out += code.slice(at)
  const vars = names.length ? `var ${[...new Set(names)].join(', ')}; ` : ''
  const copies = functions.map((f) => `globalThis[${stringify(f)}] = ${f}; `).join('')
  return `${vars}(async () => { ${copies}${out}\n})()`
}

function located(e, node) {
  e.loc = node.loc && node.loc.start
  return e
}

// ------------------------------------------------------------------ serving runs

// The cell's frames of a stack, not the kernel's or node's (a SyntaxError found while parsing
// the cell: its place in the cell).
function traceback(e, cell) {
  if (e instanceof SyntaxError && e.loc && !String(e.stack).includes('<cell')) {
    return `${e.name}: ${e.message}\n    at ${cell}:${e.loc.line}:${e.loc.column + 1}`
  }
  const lines = String(e.stack || `${e.name}: ${e.message}`).split('\n')
  const frame = /^\s+at /
  return lines.filter((l, i) => i === 0 || !frame.test(l) || l.includes('<cell')).join('\n')
}

function errorMessage(run, e, cell) {
  const isError = e instanceof Error || (e !== null && typeof e === 'object' && 'stack' in e)
  send({
    run, type: 'error',
    name: String(isError ? e.name : 'Error').slice(0, 256),
    value: String(isError ? e.message : util.inspect(e)).slice(0, TEXT_MAX),
    traceback: (isError ? traceback(e, cell) : '').slice(0, TEXT_MAX),
  })
}

function withEnv(env) {
  const saved = {}
  for (const [k, v] of Object.entries(env || {})) {
    saved[k] = hasOwn.call(process.env, k) ? process.env[k] : undefined
    process.env[k] = String(v)
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

// A cell's stray failures (a throw in a timer, a promise nobody awaits) are reported as
// stderr, as node would print them, and never end the context.
process.on('uncaughtException', (e) => emit('stderr', `Uncaught ${util.inspect(e)}\n`))
process.on('unhandledRejection', (e) => emit('stderr', `Unhandled rejection ${util.inspect(e)}\n`))

let abandon = null // rejects the pending part of the run being served (SIGINT)
process.on('SIGINT', () => { if (abandon) abandon(interruption('KeyboardInterrupt', 'interrupted')) })

function interruption(name, message) {
  const e = new Error(message)
  e.name = name
  e.stack = `${name}: ${message}`
  return e
}

async function serve(req) {
  current = req.run
  executionCount++
  const restore = withEnv(req.env)
  const timeoutMs = Number.isSafeInteger(req.timeout_ms) && req.timeout_ms > 0 ? req.timeout_ms : 0
  const cell = `<cell ${executionCount}>`
  let timer = null
  try {
    const script = new vm.Script(rewrite(String(req.code)), { filename: cell })
    const pending = script.runInThisContext({ breakOnSigint: true, ...(timeoutMs ? { timeout: timeoutMs } : {}) })
    const stop = new Promise((resolve, reject) => {
      abandon = reject
      if (timeoutMs) timer = setTimeout(() => reject(interruption('TimeoutError', `the cell ran over ${timeoutMs} ms`)), timeoutMs)
    })
    pending.catch(() => {}) // abandoned by an interrupt or a timeout, it may still reject
    const value = await Promise.race([pending, stop])
    if (value !== undefined) {
      const text = typeof value === 'string' ? `'${value}'` : util.inspect(value, { depth: 4, maxStringLength: TEXT_MAX })
      send({ run: req.run, type: 'result', main: true, data: { 'text/plain': text.slice(0, TEXT_MAX) } })
    }
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') errorMessage(req.run, interruption('KeyboardInterrupt', 'interrupted'), cell)
    else if (e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') errorMessage(req.run, interruption('TimeoutError', `the cell ran over ${timeoutMs} ms`), cell)
    else errorMessage(req.run, e, cell)
  } finally {
    abandon = null
    if (timer) clearTimeout(timer)
    restore()
    send({ run: req.run, type: 'done', execution_count: executionCount })
  }
}

async function main() {
  send({ type: 'ready', pid: process.pid })
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of lines) {
    let req
    try {
      req = JSON.parse(line)
    } catch (e) {
      continue // the host writes only JSON lines; anything else is not a request
    }
    if (req && Number.isSafeInteger(req.run) && typeof req.code === 'string') await serve(req)
  }
  process.exit(0)
}

main()
