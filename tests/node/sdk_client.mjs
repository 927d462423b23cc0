// The official MCP TypeScript SDK client (@modelcontextprotocol/sdk, pinned
// in package-lock.json) driving `codecell mcp` over stdio, or /mcp on
// `codecell serve` over Streamable HTTP, as an MCP client application would.
// Usage: node sdk_client.mjs CODECELL [ARGS...]   (stdio)
//        node sdk_client.mjs http://127.0.0.1:PORT/mcp [TOKEN]   (HTTP)
// Prints one line per check ("ok - ..."); exits 1 on the first failure.
// The SDK validates every structuredContent against the tool's
// outputSchema (ajv) and throws when a tool with an outputSchema leaves it
// out, so a call that returns is a call whose result fits its schema.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import assert from 'node:assert/strict';

const [codecell, ...args] = process.argv.slice(2);
const http = codecell.startsWith('http://');
const transport = http
  ? new StreamableHTTPClientTransport(new URL(codecell),
    args[0] ? { requestInit: { headers: { Authorization: `Bearer ${args[0]}` } } } : {})
  : new StdioClientTransport({ command: codecell, args: ['mcp', ...args], stderr: 'inherit' });
const client = new Client({ name: 'codecell-test', version: '1.0.0' });

function ok(what) {
  console.log(`ok - ${what}`);
}

try {
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'codecell');
  ok(`connected: ${client.getServerVersion().name} ${client.getServerVersion().version}`);
  if (http) {
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
    ok(`Mcp-Session-Id ${transport.sessionId}, protocol ${transport.protocolVersion}`);
  }

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['close_session', 'create_session', 'list_files', 'list_sessions',
    'read_file', 'run_code', 'write_file']);
  for (const t of tools) assert.equal(t.outputSchema?.type, 'object', t.name);
  ok('tools/list: seven tools, each with an outputSchema');

  const created = await client.callTool({ name: 'create_session', arguments: {} });
  const sid = created.structuredContent.session_id;
  // `codecell mcp`'s own ids are 16 hex digits; /mcp's sessions are in
  // the server's table, whose ids are 32
  assert.match(sid, /^[0-9a-f]{16}([0-9a-f]{16})?$/);
  ok(`create_session: ${sid}`);

  let r = await client.callTool({ name: 'run_code', arguments: { session_id: sid, code: 'x = 20' } });
  assert.equal(r.isError, false);
  r = await client.callTool({ name: 'run_code', arguments: { session_id: sid, code: 'print("half"); x * 2 + 2' } });
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.status, 'ok');
  // the whole result on failure: this once came back empty under ASan
  assert.equal(r.structuredContent.logs.stdout, 'half\n', JSON.stringify(r.structuredContent));
  assert.equal(r.structuredContent.results.find((b) => b.is_main_result)['text/plain'], '42');
  assert.equal(r.structuredContent.execution_count, 2);
  assert.equal(r.structuredContent.session_id, sid);
  ok('run_code with a session: state kept, structuredContent checked against its schema');

  r = await client.callTool({ name: 'run_code', arguments: { session_id: sid, code: 'undefined_name' } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error.name, 'NameError');
  assert.match(r.content[0].text, /NameError/);
  ok('a failing program: isError with the traceback, not an exception');

  r = await client.callTool({ name: 'write_file', arguments: { session_id: sid, path: 'a.txt', content: 'from the SDK' } });
  r = await client.callTool({ name: 'read_file', arguments: { session_id: sid, path: 'a.txt' } });
  assert.equal(r.structuredContent.content, 'from the SDK');
  r = await client.callTool({ name: 'list_files', arguments: { session_id: sid } });
  assert.ok(r.structuredContent.entries.some((e) => e.name === 'a.txt'));
  ok('write_file, read_file, list_files');

  r = await client.callTool({ name: 'run_code', arguments: { code: 'console.log(6 * 7)', language: 'javascript' } });
  assert.equal(r.structuredContent.logs.stdout, '42\n');
  ok('run_code one-shot in javascript');

  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool/);
  ok('an unknown tool is a protocol error');

  r = await client.callTool({ name: 'close_session', arguments: { session_id: sid } });
  assert.equal(r.structuredContent.closed, true);
  ok('close_session');
  if (http) {
    await transport.terminateSession();
    assert.equal(transport.sessionId, undefined);
    ok('DELETE ended the MCP session');
  }
  await client.close();
  ok('closed');
} catch (e) {
  console.log(`not ok - ${e.stack || e}`);
  try { await client.close(); } catch { /* already gone */ }
  process.exit(1);
}
