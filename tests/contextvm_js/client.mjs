// The official ContextVM client (@contextvm/sdk's NostrClientTransport under
// @modelcontextprotocol/sdk's Client), driven by a test one JSON line at a time.
//
//   node client.mjs RELAY_URL CLIENT_SECRET_HEX SERVER_PUBKEY_HEX [stateless]
//
// stdin:  {"op": "connect"} | {"op": "list", "cursor"?} | {"op": "call", "name", "arguments"} | {"op": "close"}
// stdout: {"ok": true, "result": …} or {"ok": false, "error": "…"} per line, in order;
//         {"progress": …} lines for the progress notifications of a call.
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ApplesauceRelayPool,
  EncryptionMode,
  NostrClientTransport,
  PrivateKeySigner,
} from '@contextvm/sdk';

const [relay, secret, serverPubkey, mode] = process.argv.slice(2);
const transport = new NostrClientTransport({
  signer: new PrivateKeySigner(secret),
  relayHandler: new ApplesauceRelayPool([relay], { reconnectBaseDelayMs: 200 }),
  serverPubkey,
  encryptionMode: EncryptionMode.REQUIRED,
  isStateless: mode === 'stateless',
  logLevel: 'silent',
});
const client = new Client({ name: 'contextvm-interop-test', version: '1.0.0' });
const out = (line) => process.stdout.write(JSON.stringify(line) + '\n');

async function run(command) {
  switch (command.op) {
    case 'connect':
      await client.connect(transport);
      return {
        server: client.getServerVersion(),
        encryption: transport.serverSupportsEncryption(),
        ephemeral: transport.serverSupportsEphemeralEncryption(),
      };
    case 'list':
      return await client.listTools(command.cursor ? { cursor: command.cursor } : undefined);
    case 'call':
      return await client.callTool(
        { name: command.name, arguments: command.arguments ?? {} },
        undefined,
        {
          timeout: 120000,
          onprogress: (progress) => out({ progress }),
        },
      );
    case 'close':
      await client.close();
      return null;
    default:
      throw new Error(`unknown op ${command.op}`);
  }
}

// One command at a time, in order: the test waits for each answer before the next.
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = JSON.parse(line);
  try {
    out({ ok: true, result: await run(command) });
  } catch (error) {
    out({ ok: false, error: String(error?.message ?? error) });
  }
  if (command.op === 'close') break;
}
process.exit(0);
