// A stand-in ContextVM server from the official SDK (@contextvm/sdk's NostrServerTransport
// under @modelcontextprotocol/sdk's McpServer), for testing our client against theirs.
//
//   node server.mjs RELAY_URL SERVER_SECRET_HEX ALLOWED_PUBKEY_HEX
//
// It serves two tools named like ours: snapshot (text, echoing its arguments and the
// caller's pubkey) and screenshot (a PNG as image content); only ALLOWED_PUBKEY_HEX may
// call.  It prints "ready" once subscribed, then serves until killed.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import {
  ApplesauceRelayPool,
  EncryptionMode,
  NostrServerTransport,
  PrivateKeySigner,
} from '@contextvm/sdk';

const [relay, secret, allowed] = process.argv.slice(2);
// The smallest PNG: one transparent pixel.
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

const server = new McpServer({ name: 'stand-in', version: '1.0.0' });
server.registerTool(
  'snapshot',
  { description: 'echo', inputSchema: { interactive: z.boolean().optional() } },
  async (args) => ({ content: [{ type: 'text', text: `snapshot ${JSON.stringify(args)}` }] }),
);
server.registerTool('screenshot', { description: 'a pixel' }, async () => ({
  content: [
    { type: 'image', data: PIXEL, mimeType: 'image/png' },
    { type: 'text', text: 'one pixel' },
  ],
}));
const transport = new NostrServerTransport({
  signer: new PrivateKeySigner(secret),
  relayHandler: new ApplesauceRelayPool([relay], { reconnectBaseDelayMs: 200 }),
  encryptionMode: EncryptionMode.REQUIRED,
  allowedPublicKeys: [allowed],
  logLevel: 'silent',
});
await server.connect(transport);
process.stdout.write('ready\n');
