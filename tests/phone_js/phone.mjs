// An independent phone side for the tests: a NIP-17 chat client on nostr-tools that sends
// text commands to the daemon and opens the file messages (kind 15) it gets back as a chat
// app does: fetch the URL, check x, decrypt with WebCrypto's AES-GCM, check ox.
// Usage: node phone.mjs RELAY_URL SECRET_HEX DAEMON_PUBKEY OUT_FILE COMMAND...
// Sends each command after the reply to the one before; writes the last file to OUT_FILE and
// prints {replies, file: {type, dim, size, e}} as JSON; exits 1 with the reason on stderr.
import { writeFileSync } from "node:fs";
import { wrapEvent } from "nostr-tools/nip17";
import { unwrapEvent } from "nostr-tools/nip59";
import { getPublicKey } from "nostr-tools/pure";
import { SimplePool, useWebSocketImplementation } from "nostr-tools/pool";
import { hexToBytes, bytesToHex } from "nostr-tools/utils";
import WebSocket from "ws";

useWebSocketImplementation(WebSocket);

const [relay, secretHex, daemon, outFile, ...commands] = process.argv.slice(2);
const secret = hexToBytes(secretHex);
const me = getPublicKey(secret);
const pool = new SimplePool();
const seen = new Set();
const waiting = [];
const replies = [];
let file = null;

const tag = (rumor, name) => rumor.tags.find((t) => t[0] === name)?.[1];
const sha256 = async (bytes) => bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

async function openFile(rumor) {
  const blob = new Uint8Array(await (await fetch(rumor.content)).arrayBuffer());
  if ((await sha256(blob)) !== tag(rumor, "x")) throw new Error("x does not match the blob");
  if (tag(rumor, "encryption-algorithm") !== "aes-gcm") throw new Error("not aes-gcm");
  const key = await crypto.subtle.importKey(
    "raw", hexToBytes(tag(rumor, "decryption-key")), "AES-GCM", false, ["decrypt"],
  );
  const iv = hexToBytes(tag(rumor, "decryption-nonce"));
  const data = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, blob));
  if ((await sha256(data)) !== tag(rumor, "ox")) throw new Error("ox does not match the file");
  writeFileSync(outFile, data);
  return { type: tag(rumor, "file-type"), dim: tag(rumor, "dim"), size: tag(rumor, "size"), e: tag(rumor, "e") };
}

async function take(wrap) {
  if (seen.has(wrap.id)) return;
  seen.add(wrap.id);
  const rumor = unwrapEvent(wrap, secret);
  if (rumor.pubkey !== daemon) return;
  if (rumor.kind === 15) file = await openFile(rumor);
  if (rumor.kind === 14) {
    replies.push({ text: rumor.content, e: tag(rumor, "e") });
    waiting.shift()?.();
  }
}

const since = Math.floor(Date.now() / 1000) - 3 * 24 * 3600;  // gift wraps are back-dated
let eose;
const subscribed = new Promise((resolve) => (eose = resolve));
const pending = [];
pool.subscribeMany([relay], { kinds: [1059], "#p": [me], since }, {
  onevent: (wrap) => pending.push(take(wrap).catch((error) => fail(error))),
  oneose: () => eose(),
});
await subscribed;

function fail(error) {
  console.error(String(error));
  process.exit(1);
}

for (const command of commands) {
  const answered = new Promise((resolve) => waiting.push(resolve));
  const wrap = wrapEvent(secret, { publicKey: daemon }, command);
  await Promise.any(pool.publish([relay], wrap));
  await answered;
}
await Promise.all(pending);
console.log(JSON.stringify({ replies, file }));
pool.close([relay]);
process.exit(0);
