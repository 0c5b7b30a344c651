// The bench's phone (bench/phone.py): nostr-tools and WebCrypto, as the tests' phone
// (tests/phone_js/chat.mjs).  Times one picture two ways, interleaved, for ROUNDS rounds after
// a warm-up of each:
//   file: the text command TEXT; done when its kind 15 is fetched, checked and decrypted;
//   json: the JSON request JSON (an id is added); done when its numbered parts are joined,
//         checked against their sha256 and the base64 decoded.
// Usage: node bench/phone.mjs RELAY_URL SECRET_HEX DAEMON_PUBKEY ROUNDS TEXT JSON [SETUP]
// (SETUP: a text command sent first, such as `open URL`, whose reply is awaited.)
// Prints {file: [...], json: [...]} (ms, bytes on the wire, file size); exits 1 on a fault.
import { performance } from "node:perf_hooks";
import { Chat, openFile, sha256 } from "../tests/phone_js/chat.mjs";

const [relay, secretHex, daemon, roundsText, text, json, setup] = process.argv.slice(2);
const chat = new Chat(relay, secretHex, daemon);
const PART_KEYS = ["data", "id", "part", "parts", "sha256"];
let current = null; // the request being timed: takes each of the daemon's rumors

function fail(error) {
  console.error(String(error?.stack || error));
  process.exit(1);
}

// The text command: its file message opened, and its text reply (which follows it).
function byFile(started) {
  const row = { wire: 0 };
  return {
    async take(rumor, wire, done) {
      row.wire += wire;
      if (rumor.kind === 15) {
        const file = await openFile(rumor);
        row.ms = performance.now() - started;
        row.blob = file.blob;
        row.size = file.data.length;
        row.wire += file.blob;
      } else if (rumor.kind === 14) {
        row.text_ms = performance.now() - started;
        // "sent as a file message", or (a slow upload) "it follows as a file message"
        if (!rumor.content.includes("as a file message")) throw new Error(rumor.content);
      }
      if (row.ms !== undefined && row.text_ms !== undefined) done(row);
    },
  };
}

// The JSON request: its reply in numbered parts, joined and decoded as a phone would.
function byParts(started, id) {
  const row = { wire: 0, parts: 0 };
  const parts = new Map();
  return {
    async take(rumor, wire, done) {
      row.wire += wire;
      const message = JSON.parse(rumor.content);
      let whole = message;
      if (Object.keys(message).sort().join() === PART_KEYS.join()) {
        parts.set(message.part, message);
        if (parts.size < message.parts) return;
        const joined = [...parts.keys()].sort((a, b) => a - b).map((n) => parts.get(n).data).join("");
        if ((await sha256(new TextEncoder().encode(joined))) !== message.sha256) {
          throw new Error("the joined parts do not match their sha256");
        }
        row.parts = parts.size;
        whole = JSON.parse(joined);
      }
      if (whole.id !== id || !whole.success) throw new Error(JSON.stringify(whole).slice(0, 300));
      row.size = Buffer.from(whole.data.base64, "base64").length;
      row.ms = performance.now() - started;
      done(row);
    },
  };
}

function ask(make, content) {
  return new Promise((resolve, reject) => {
    current = { ...make(performance.now()), resolve, reject };
    chat.send(content).catch(reject);
  });
}

await chat.listen(async (rumor, wire) => {
  const taker = current;
  if (taker === null) throw new Error(`an unasked message: ${rumor.content.slice(0, 200)}`);
  await taker.take(rumor, wire, (row) => {
    current = null;
    taker.resolve(row);
  });
}, fail);

const rows = { file: [], json: [] };
const asked = JSON.parse(json);
let n = 0;
const once = {
  file: () => ask((started) => byFile(started), text),
  json: () => {
    const id = `phone-${process.pid}-${n++}`;
    return ask((started) => byParts(started, id), JSON.stringify({ ...asked, id }));
  },
};
if (setup) {
  const replied = (started) => ({ take: async (rumor, wire, done) => done(rumor) });
  const reply = await ask(replied, setup);
  if (reply.kind !== 14 || reply.content.startsWith("error")) throw new Error(reply.content);
}
await once.file();
await once.json();
for (let i = 0; i < Number(roundsText); i++) {
  // Alternate which goes first, so that a noisy neighbour hits both alike.
  for (const way of i % 2 ? ["json", "file"] : ["file", "json"]) rows[way].push(await once[way]());
}
console.log(JSON.stringify(rows));
chat.close();
process.exit(0);
