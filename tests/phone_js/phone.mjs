// An independent phone side for the tests: a NIP-17 chat client on nostr-tools that sends
// text commands to the daemon and opens the file messages (kind 15) it gets back as a chat
// app does (chat.mjs).
// Usage: node phone.mjs RELAY_URL SECRET_HEX DAEMON_PUBKEY OUT_FILE COMMAND...
// Sends each command after the reply to the one before; writes the last file to OUT_FILE and
// prints {replies, file: {type, dim, size, e}} as JSON; exits 1 with the reason on stderr.
import { writeFileSync } from "node:fs";
import { Chat, openFile, tag } from "./chat.mjs";

const [relay, secretHex, daemon, outFile, ...commands] = process.argv.slice(2);
const chat = new Chat(relay, secretHex, daemon);
const waiting = [];
const replies = [];
const pending = [];
let file = null;

function fail(error) {
  console.error(String(error));
  process.exit(1);
}

async function take(rumor) {
  if (rumor.kind === 15) {
    const { data, type, dim, size, e } = await openFile(rumor);
    writeFileSync(outFile, data);
    file = { type, dim, size, e };
  }
  if (rumor.kind === 14) {
    replies.push({ text: rumor.content, e: tag(rumor, "e") });
    waiting.shift()?.();
  }
}

await chat.listen((rumor) => {
  const taken = take(rumor);
  pending.push(taken);
  return taken;
}, fail);

for (const command of commands) {
  const answered = new Promise((resolve) => waiting.push(resolve));
  await chat.send(command);
  await answered;
}
await Promise.all(pending);
console.log(JSON.stringify({ replies, file }));
chat.close();
process.exit(0);
