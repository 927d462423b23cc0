// E2B's published code-interpreter SDK (@e2b/code-interpreter, pinned in
// package-lock.json), unmodified, against a `codecell serve` that
// tests/e2e/test_e2b_sdk.py started.  The SDK finds the server through
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY, as a user's code would.
//
//   node e2b_client.mjs GROUP     GROUP: code, contexts, files, commands,
//                                 errors, auth, policy, bench
// TAP-like lines: "ok - name" or "not ok - name: why"; exit 1 on a failure.
import {
  Sandbox, NotFoundError, FileNotFoundError, TimeoutError,
  CommandExitError, AuthenticationError, InvalidArgumentError, RateLimitError,
  SandboxError,
} from '@e2b/code-interpreter'

// not exported by the package: known by its class's name
const isExecutionError = (e) => e && e.constructor && e.constructor.name === 'ExecutionError'

let failed = 0
async function t(name, fn) {
  try {
    await fn()
    console.log(`ok - ${name}`)
  } catch (e) {
    failed++
    console.log(`not ok - ${name}: ${e && e.stack ? e.stack : e}`)
  }
}
function check(cond, msg) {
  if (!cond) throw new Error(msg)
}
function eq(a, b, msg) {
  const ja = JSON.stringify(a), jb = JSON.stringify(b)
  if (ja !== jb) throw new Error(`${msg || 'not equal'}: ${ja} != ${jb}`)
}
async function rejects(p, cls, msg) {
  try {
    await p
  } catch (e) {
    if (!(e instanceof cls)) throw new Error(`${msg}: expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e}`)
    return e
  }
  throw new Error(`${msg}: expected ${cls.name}, got no error`)
}

async function code() {
  const sbx = await Sandbox.create()
  await t('create gives an id the list knows', async () => {
    check(/^[0-9a-f]{32}$/.test(sbx.sandboxId), sbx.sandboxId)
    const ids = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
    check(ids.includes(sbx.sandboxId), `list: ${ids}`)
  })
  await t('runCode fires onStdout, onStderr and onResult as the code runs', async () => {
    const seen = []
    const ex = await sbx.runCode('import sys, time\nprint("first")\nsys.stdout.flush()\ntime.sleep(2)\nprint("oops", file=sys.stderr)\n6*7', {
      onStdout: (m) => seen.push(['out', m.line, Date.now()]),
      onStderr: (m) => seen.push(['err', m.line, Date.now()]),
      onResult: (r) => seen.push(['res', r.text, Date.now()]),
    })
    eq(ex.text, '42', 'main result')
    eq(ex.logs.stdout.join(''), 'first\n', 'stdout')
    eq(ex.logs.stderr.join(''), 'oops\n', 'stderr')
    const kinds = seen.map((s) => s[0])
    check(kinds.indexOf('out') < kinds.indexOf('err') && kinds.indexOf('err') < kinds.indexOf('res'), `order: ${kinds}`)
    // the first line came while the cell slept (2 s): streamed, not
    // batched at the end (a margin of 1 s for a loaded machine)
    const out = seen.find((s) => s[0] === 'out'), res = seen.find((s) => s[0] === 'res')
    check(res[2] - out[2] >= 1000, `stdout was not streamed: ${res[2] - out[2]} ms before the result`)
    check(ex.error === undefined, `error: ${ex.error}`)
  })
  await t('output events end at line ends, as Jupyter sends them', async () => {
    // print() writes the text and the line end apart; an event each
    // would be "line 3" and then "\n"
    const ex = await sbx.runCode('for i in range(20):\n    print("line", i)')
    eq(ex.logs.stdout.join(''), Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(''), 'text')
    check(ex.logs.stdout.every((l) => l.endsWith('\n')), `events: ${JSON.stringify(ex.logs.stdout)}`)
  })
  await t('output without a line end still comes as the code runs', async () => {
    const seen = []
    const ex = await sbx.runCode('import sys, time\nsys.stdout.write("50%")\nsys.stdout.flush()\ntime.sleep(2)\nprint(" done")', {
      onStdout: (m) => seen.push([m.line, Date.now()]),
    })
    eq(ex.logs.stdout.join(''), '50% done\n', 'stdout')
    check(seen.length === 2 && seen[1][1] - seen[0][1] >= 1000, `events ${JSON.stringify(seen)}`)
  })
  await t('an exception is an ExecutionError, and onError fires', async () => {
    let got
    const ex = await sbx.runCode('def f():\n    return 1/0\nf()', { onError: (e) => { got = e } })
    check(isExecutionError(ex.error), `error: ${ex.error}`)
    eq(ex.error.name, 'ZeroDivisionError', 'name')
    eq(ex.error.value, 'division by zero', 'value')
    check(ex.error.traceback.includes('return 1/0'), ex.error.traceback)
    check(got === ex.error, 'onError')
  })
  await t('state carries across calls, and executionCount counts them', async () => {
    const a = await sbx.runCode('x = 20')
    const b = await sbx.runCode('x + 1')
    eq(b.text, '21', 'x')
    check(b.executionCount === a.executionCount + 1, `counts ${a.executionCount} ${b.executionCount}`)
  })
  await t('a matplotlib figure comes back as a PNG result', async () => {
    const results = []
    const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()', {
      onResult: (r) => results.push(r),
    })
    check(ex.error === undefined, `error: ${ex.error && ex.error.value}`)
    const png = ex.results.find((r) => r.png)
    check(png, `no png among ${JSON.stringify(ex.results.map((r) => r.formats()))}`)
    eq(Buffer.from(png.png, 'base64').subarray(0, 4).toString('latin1'), '\x89PNG', 'PNG signature')
    check(results.includes(png), 'onResult got the figure')
    check(png.formats().includes('png'), 'formats')
  })
  await t('a DataFrame has text and html', async () => {
    const ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2]})')
    check(ex.results[0].html && ex.results[0].html.includes('<table'), `html: ${ex.results[0].html}`)
    check(ex.results[0].text.includes('a'), 'text')
  })
  await t('envs of one runCode reach the code, and do not stay', async () => {
    const ex = await sbx.runCode('import os\nos.environ.get("CC_E2B_VAR")', { envs: { CC_E2B_VAR: 'hello' } })
    eq(ex.text, "'hello'", 'env')
    eq((await sbx.runCode('import os\nos.environ.get("CC_E2B_VAR")')).text, undefined, 'env after')
  })
  await t('runCode past its timeoutMs is a TimeoutError, and the sandbox goes on', async () => {
    await rejects(sbx.runCode('import time\ntime.sleep(30)', { timeoutMs: 1500 }), TimeoutError, 'runCode')
    // the client went away: the cell was interrupted, the next runs
    let ex
    for (let i = 0; i < 40; i++) {
      ex = await sbx.runCode('x')
      if (ex.text === '20') break
      await new Promise((r) => setTimeout(r, 250))
    }
    eq(ex.text, '20', 'state after the timeout')
  })
  await t('getInfo, setTimeout and connect', async () => {
    const info = await Sandbox.getInfo(sbx.sandboxId)
    eq(info.sandboxId, sbx.sandboxId, 'id')
    eq(info.templateId, 'code-interpreter-v1', 'template')
    eq(info.state, 'running', 'state')
    await sbx.setTimeout(120_000)
    const end = (await Sandbox.getInfo(sbx.sandboxId)).endAt.getTime()
    check(Math.abs(end - Date.now() - 120_000) < 30_000, `endAt ${new Date(end).toISOString()}`)
    const again = await Sandbox.connect(sbx.sandboxId)
    eq((await again.runCode('x * 2')).text, '40', 'the connected sandbox has the state')
  })
  await t('create honours metadata and envs; list filters by metadata', async () => {
    const other = await Sandbox.create({ metadata: { purpose: 'e2b test', n: '2' }, envs: { CC_SBX: 'yes' } })
    try {
      eq((await other.runCode('import os\nos.environ["CC_SBX"]')).text, "'yes'", 'env')
      const found = await Sandbox.list({ query: { metadata: { purpose: 'e2b test' } } }).nextItems()
      eq(found.map((s) => s.sandboxId), [other.sandboxId], 'filtered list')
      eq(found[0].metadata, { purpose: 'e2b test', n: '2' }, 'metadata')
    } finally {
      await other.kill()
    }
  })
  await t('kill ends the sandbox: gone from the list, its calls fail', async () => {
    await sbx.kill()
    const ids = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
    check(!ids.includes(sbx.sandboxId), 'still listed')
    eq(await Sandbox.kill(sbx.sandboxId), false, 'a second kill')
    await rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError, 'getInfo')
    await rejects(sbx.runCode('1'), SandboxError, 'runCode')
    await rejects(sbx.files.read('a'), SandboxError, 'files.read')
  })
}

async function contexts() {
  const sbx = await Sandbox.create()
  try {
    await t('a JavaScript context keeps state and sees the Python files', async () => {
      await sbx.runCode('open("shared.txt", "w").write("from python")')
      const js = await sbx.createCodeContext({ language: 'javascript' })
      eq(js.language, 'javascript', 'language')
      eq(js.cwd, '/home/user', 'cwd')
      const a = await sbx.runCode('const fs = require("fs"); let n = 40; fs.readFileSync("shared.txt", "utf8")', { context: js })
      eq(a.text, "'from python'", 'read')
      const lines = []
      const b = await sbx.runCode('console.log("n is", n); fs.writeFileSync("from_js.txt", "js wrote"); n + 2', {
        context: js, onStdout: (m) => lines.push(m.line),
      })
      eq(b.text, '42', 'state')
      eq(lines.join(''), 'n is 40\n', 'onStdout')
      eq((await sbx.runCode('open("from_js.txt").read()')).text, "'js wrote'", 'python reads what js wrote')
    })
    await t('a JavaScript error is an ExecutionError with its name', async () => {
      const ex = await sbx.runCode('null.x', { language: 'javascript' })
      check(isExecutionError(ex.error), `error: ${ex.error}`)
      eq(ex.error.name, 'TypeError', 'name')
      check(ex.error.value.includes('null'), ex.error.value)
    })
    await t('a bash context runs in the same sandbox', async () => {
      const ex = await sbx.runCode('cat shared.txt; echo; pwd', { language: 'bash' })
      eq(ex.logs.stdout.join(''), 'from python\n/home/user\n', 'stdout')
    })
    await t('a second Python context has its own variables, the same files', async () => {
      const py = await sbx.createCodeContext({ language: 'python' })
      await sbx.runCode('y = 1', { context: py })
      const ex = await sbx.runCode('y', { context: py })
      eq(ex.text, '1', 'own state')
      const main = await sbx.runCode('"y" in dir()')
      eq(main.text, 'False', 'the default context does not see it')
      eq((await sbx.runCode('open("shared.txt").read()', { context: py })).text, "'from python'", 'files')
    })
    await t('contexts are listed, restarted and removed', async () => {
      const ctx = await sbx.createCodeContext({ language: 'javascript', cwd: '/home/user' })
      await sbx.runCode('var kept = 1', { context: ctx })
      const ids = (await sbx.listCodeContexts()).map((c) => c.id)
      check(ids.includes(ctx.id), `list: ${ids}`)
      await sbx.restartCodeContext(ctx)
      const after = await sbx.runCode('typeof kept', { context: ctx })
      eq(after.text, "'undefined'", 'restart forgot the state')
      await sbx.removeCodeContext(ctx)
      check(!(await sbx.listCodeContexts()).map((c) => c.id).includes(ctx.id), 'removed')
      await rejects(sbx.runCode('1', { context: ctx }), NotFoundError, 'a removed context')
    })
    await t('restarting the default context forgets variables, keeps files', async () => {
      await sbx.runCode('z = 5')
      const def = (await sbx.listCodeContexts()).find((c) => c.language === 'python')
      await sbx.restartCodeContext(def)
      eq((await sbx.runCode('"z" in dir()')).text, 'False', 'variables')
      eq((await sbx.runCode('open("shared.txt").read()')).text, "'from python'", 'files')
    })
    await t('an unknown language is refused', async () => {
      await rejects(sbx.runCode('1', { language: 'cobol' }), SandboxError, 'cobol')
    })
  } finally {
    await sbx.kill()
  }
}

async function files() {
  const sbx = await Sandbox.create()
  try {
    await t('write, read, list, getInfo, exists', async () => {
      const info = await sbx.files.write('/home/user/dir/a.txt', 'hello')
      eq([info.name, info.path, info.type], ['a.txt', '/home/user/dir/a.txt', 'file'], 'write')
      eq(await sbx.files.read('dir/a.txt'), 'hello', 'read')
      const bytes = await sbx.files.read('dir/a.txt', { format: 'bytes' })
      eq(Array.from(bytes), Array.from(Buffer.from('hello')), 'bytes')
      const list = await sbx.files.list('/home/user/dir')
      eq(list.map((e) => [e.name, e.type, e.path, e.size]), [['a.txt', 'file', '/home/user/dir/a.txt', 5]], 'list')
      check(await sbx.files.exists('dir/a.txt'), 'exists')
      check(!(await sbx.files.exists('dir/nope')), 'not exists')
      const st = await sbx.files.getInfo('dir')
      eq(st.type, 'dir', 'getInfo type')
      eq((await sbx.runCode('open("dir/a.txt").read()')).text, "'hello'", 'the code sees it')
    })
    await t('binary data and an octet-stream upload', async () => {
      const data = Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 7) % 256))
      await sbx.files.write('bin.dat', new Blob([data]))
      eq(Buffer.from(await sbx.files.read('bin.dat', { format: 'bytes' })).equals(data), true, 'multipart')
      await sbx.files.write('bin2.dat', data.buffer.slice(data.byteOffset, data.byteOffset + data.length), { useOctetStream: true })
      eq(Buffer.from(await sbx.files.read('bin2.dat', { format: 'bytes' })).equals(data), true, 'octet-stream')
    })
    await t('writeFiles puts several files in one request', async () => {
      const infos = await sbx.files.write([{ path: 'w/one.txt', data: '1' }, { path: '/home/user/w/two.txt', data: '22' }])
      eq(infos.map((i) => i.path), ['/home/user/w/one.txt', '/home/user/w/two.txt'], 'paths')
      eq(await sbx.files.read('w/one.txt'), '1', 'one')
      eq(await sbx.files.read('w/two.txt'), '22', 'two')
    })
    await t('makeDir, rename, remove; list with depth', async () => {
      check(await sbx.files.makeDir('m/n'), 'makeDir')
      eq(await sbx.files.makeDir('m/n'), false, 'makeDir again')
      await sbx.files.write('m/n/f.txt', 'x')
      const deep = await sbx.files.list('m', { depth: 2 })
      eq(deep.map((e) => e.path).sort(), ['/home/user/m/n', '/home/user/m/n/f.txt'], 'depth 2')
      const moved = await sbx.files.rename('m/n/f.txt', 'm/g.txt')
      eq(moved.path, '/home/user/m/g.txt', 'rename')
      await sbx.files.remove('m')
      check(!(await sbx.files.exists('m')), 'removed')
    })
    await t('a missing file is a FileNotFoundError', async () => {
      await rejects(sbx.files.read('nope.txt'), FileNotFoundError, 'read')
      await rejects(sbx.files.list('nope'), FileNotFoundError, 'list')
      await rejects(sbx.files.getInfo('nope'), FileNotFoundError, 'getInfo')
    })
    await t('paths out of the workspace are refused', async () => {
      await rejects(sbx.files.read('/etc/passwd'), InvalidArgumentError, 'absolute')
      await rejects(sbx.files.read('../../etc/passwd'), InvalidArgumentError, '..')
      await rejects(sbx.files.write('/tmp/x', 'y'), InvalidArgumentError, 'write /tmp')
      await rejects(sbx.files.list('/'), InvalidArgumentError, 'list /')
      await sbx.runCode('import os\nos.symlink("/etc", "etc_link")')
      await rejects(sbx.files.read('etc_link/passwd'), InvalidArgumentError, 'a symlink planted by the code')
    })
  } finally {
    await sbx.kill()
  }
}

async function commands() {
  const sbx = await Sandbox.create()
  try {
    await t('commands.run in the foreground: stdout, stderr, exit code', async () => {
      const out = []
      const r = await sbx.commands.run('echo out; echo err >&2; printf %s "$CC_X" > cmd.txt; pwd', {
        envs: { CC_X: 'env ok' }, onStdout: (d) => out.push(d),
      })
      eq(r.exitCode, 0, 'exit')
      eq(r.stdout, 'out\n/home/user\n', 'stdout')
      eq(r.stderr, 'err\n', 'stderr')
      check(out.join('').includes('out'), 'onStdout')
      eq(await sbx.files.read('cmd.txt'), 'env ok', 'the file it wrote, with its env')
      eq((await sbx.runCode('open("cmd.txt").read()')).text, "'env ok'", 'the code sees it')
    })
    await t('cwd, and a failing command is a CommandExitError', async () => {
      await sbx.files.makeDir('sub')
      eq((await sbx.commands.run('pwd', { cwd: '/home/user/sub' })).stdout, '/home/user/sub\n', 'cwd')
      const e = await rejects(sbx.commands.run('echo no >&2; exit 3'), CommandExitError, 'exit 3')
      eq(e.exitCode, 3, 'exitCode')
      eq(e.stderr, 'no\n', 'stderr')
    })
    await t('a background command streams, can be listed and waited for', async () => {
      const lines = []
      // it waits (up to 60 s) for the file "release" after its ticks, so
      // that a slow server (the sanitized build) still lists it running
      const h = await sbx.commands.run('for i in 1 2 3; do echo tick $i; sleep 0.2; done; ' +
        'for j in $(seq 1200); do [ -e release ] && break; sleep 0.05; done', {
        background: true, onStdout: (d) => lines.push(d),
      })
      check(h.pid > 0, `pid ${h.pid}`)
      const listed = (await sbx.commands.list()).map((p) => p.pid)
      check(listed.includes(h.pid), `list ${listed}`)
      // code runs meanwhile
      eq((await sbx.runCode('1+1')).text, '2', 'runCode meanwhile')
      await sbx.files.write('release', '')
      const r = await h.wait()
      eq(r.stdout, 'tick 1\ntick 2\ntick 3\n', 'stdout')
      check(lines.length >= 1, 'onStdout')
    })
    await t('connect takes up a command whose stream was dropped', async () => {
      const h = await sbx.commands.run('for i in 1 2 3 4 5; do echo tick $i; sleep 0.3; done; exit 4', { background: true })
      await h.disconnect()
      const again = await sbx.commands.connect(h.pid)
      const e = await rejects(again.wait(), CommandExitError, 'wait')
      eq(e.exitCode, 4, 'exit code')
      check(e.stdout.includes('tick 5\n'), `stdout ${JSON.stringify(e.stdout)}`)
      await rejects(sbx.commands.connect(999999), NotFoundError, 'an unknown pid')
    })
    await t('kill ends a background command', async () => {
      const h = await sbx.commands.run('sleep 60', { background: true })
      eq(await h.kill(), true, 'kill')
      await rejects(h.wait(), CommandExitError, 'wait after kill')
      eq(await sbx.commands.kill(h.pid), false, 'a second kill')
    })
    await t('a command past its timeoutMs is a TimeoutError', async () => {
      await rejects(sbx.commands.run('sleep 30', { timeoutMs: 1500 }), TimeoutError, 'timeout')
      // the server kills it at the deadline, a moment after the SDK gave up
      let left = 1
      for (let i = 0; i < 40 && left; i++) {
        left = (await sbx.commands.list()).length
        if (left) await new Promise((r) => setTimeout(r, 250))
      }
      eq(left, 0, 'nothing left running')
    })
  } finally {
    await sbx.kill()
  }
}

async function errors() {
  await t('an unknown sandbox is a NotFoundError', async () => {
    const id = '0123456789abcdef0123456789abcdef'
    await rejects(Sandbox.getInfo(id), NotFoundError, 'getInfo')
    await rejects(Sandbox.connect(id), NotFoundError, 'connect')
    await rejects(Sandbox.setTimeout(id, 1000), NotFoundError, 'setTimeout')
    eq(await Sandbox.kill(id), false, 'kill')
  })
  await t("an unknown template is a 404 (a SandboxError in E2B's SDK)", async () => {
    const e = await rejects(Sandbox.create('no-such-template'), SandboxError, 'create')
    check(e.message.includes('404') && e.message.includes('not found'), e.message)
  })
  await t('too many sandboxes is a RateLimitError', async () => {
    // the server runs with --max-sessions 1
    const a = await Sandbox.create()
    try {
      await rejects(Sandbox.create(), RateLimitError, 'second')
    } finally {
      await a.kill()
    }
  })
  await t('a sandbox past its timeout is gone', async () => {
    const s = await Sandbox.create({ timeoutMs: 1000 })
    let gone = false
    for (let i = 0; i < 60 && !gone; i++) {
      await new Promise((r) => setTimeout(r, 250))
      gone = !(await Sandbox.list().nextItems()).map((x) => x.sandboxId).includes(s.sandboxId)
    }
    check(gone, 'still listed')
    await rejects(s.runCode('1'), SandboxError, 'runCode')
  })
}

async function auth() {
  await t('the right API key creates a sandbox whose calls carry its access token', async () => {
    const s = await Sandbox.create()
    try {
      eq((await s.runCode('1+1')).text, '2', 'runCode')
      await s.files.write('a.txt', 'x')
      eq(await s.files.read('a.txt'), 'x', 'files')
      eq((await s.commands.run('echo hi')).stdout, 'hi\n', 'commands')
      const ctx = await s.createCodeContext({ language: 'javascript' })
      eq((await s.runCode('1+2', { context: ctx })).text, '3', 'contexts')
    } finally {
      await s.kill()
    }
  })
  await t('a wrong API key is an AuthenticationError', async () => {
    await rejects(Sandbox.create({ apiKey: 'e2b_0badbadbadbadbad' }), AuthenticationError, 'create')
    await rejects(Sandbox.list({ apiKey: 'e2b_0badbadbadbadbad' }).nextItems(), AuthenticationError, 'list')
  })
}

// E2B_API_KEY is a policy file's client key (tests/e2e/test_e2b_policy.py):
// CC_ALICE may run python, javascript and bash, write files up to 1K and
// have deletes held for approval (1 s, nobody decides: denied); CC_BOB
// may run python only.
async function policy() {
  const alice = await Sandbox.create({ apiKey: process.env.CC_ALICE })
  try {
    await t('a client key as E2B_API_KEY runs code, commands and files', async () => {
      eq((await alice.runCode('1+1')).text, '2', 'runCode')
      eq((await alice.commands.run('echo hi')).stdout, 'hi\n', 'commands')
      await alice.files.write('a.txt', 'x')
      eq(await alice.files.read('a.txt'), 'x', 'files')
      await alice.files.makeDir('d')
    })
    await t("an upload over the client's max_file is refused naming the rule", async () => {
      const e = await rejects(alice.files.write('big.bin', 'x'.repeat(2048)), SandboxError, 'write')
      check(/rule 'max_file'/.test(e.message), e.message)
      check(!(await alice.files.exists('big.bin')), 'big.bin was written')
    })
    await t('a remove held for approval and not decided is denied; the file stays', async () => {
      const e = await rejects(alice.files.remove('a.txt'), SandboxError, 'remove')
      check(/rule 'approval'/.test(e.message), e.message)
      check(await alice.files.exists('a.txt'), 'a.txt was removed')
    })
  } finally {
    await alice.kill()
  }
  const bob = await Sandbox.create({ apiKey: process.env.CC_BOB })
  try {
    await t("another key gets its own policy: no bash commands, no javascript", async () => {
      eq((await bob.runCode('6*7')).text, '42', 'python')
      let e = await rejects(bob.commands.run('echo hi'), SandboxError, 'commands')
      check(/rule 'languages'/.test(e.message), e.message)
      // refused as a limit is: the execution's error names the rule
      const ex = await bob.runCode('1', { language: 'javascript' })
      check(ex.error && ex.error.name === 'rejected' && /rule 'languages'/.test(ex.error.value), JSON.stringify(ex.error))
      await bob.files.remove('nothing-to-remove').catch((x) => check(x instanceof NotFoundError, `remove: ${x}`))
    })
  } finally {
    await bob.kill()
  }
  await t('a key that is no client is an AuthenticationError', async () => {
    await rejects(Sandbox.create({ apiKey: 'e2b_0badbadbadbadbad' }), AuthenticationError, 'create')
    await rejects(Sandbox.list({ apiKey: 'not-a-client-key-0123' }).nextItems(), AuthenticationError, 'list')
  })
}

async function bench() {
  // Sandbox.create() + runCode('1+1') + kill(), and the same through
  // /v1 as the baseline of this run; rounds interleaved, medians
  const n = Number(process.argv[3] || 30)
  const base = process.env.E2B_API_URL
  const v1 = async () => {
    const post = (path, body) => fetch(base + path, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    }).then((r) => r.json())
    const s = await post('/v1/sessions', {})
    const r = await post(`/v1/sessions/${s.id}/execute`, { code: '1+1' })
    await fetch(`${base}/v1/sessions/${s.id}`, { method: 'DELETE' }).then((r) => r.arrayBuffer())
    if (r.results[0]['text/plain'] !== '2') throw new Error(`/v1 gave ${JSON.stringify(r)}`)
  }
  const e2b = async () => {
    const s = await Sandbox.create()
    const ex = await s.runCode('1+1')
    await s.kill()
    if (ex.text !== '2') throw new Error(`runCode gave ${ex.text}`)
  }
  const times = { e2b: [], v1: [] }
  await e2b()
  await v1() // warm both paths up
  for (let i = 0; i < n; i++) {
    for (const [name, fn] of [['e2b', e2b], ['v1', v1]]) {
      const t0 = performance.now()
      await fn()
      times[name].push(performance.now() - t0)
    }
  }
  const med = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]
  const me = med(times.e2b), mv = med(times.v1)
  console.log(`E2B SDK: Sandbox.create() + runCode('1+1') + kill(), ${n} rounds: median ${me.toFixed(1)} ms (min ${times.e2b[0].toFixed(1)}, max ${times.e2b[n - 1].toFixed(1)})`)
  console.log(`/v1 baseline: create session + execute 1+1 + delete, same server: median ${mv.toFixed(1)} ms; E2B door / v1 = ${(me / mv).toFixed(2)}`)
  console.log(`E2B cloud, published: ~440 ms to a ready sandbox alone; codecell round trip = ${(me / 440).toFixed(3)} of it`)
}

const groups = { code, contexts, files, commands, errors, auth, policy, bench }
const g = groups[process.argv[2]]
if (!g) {
  console.log(`usage: node e2b_client.mjs ${Object.keys(groups).join('|')}`)
  process.exit(2)
}
await g()
process.exit(failed ? 1 : 0)
