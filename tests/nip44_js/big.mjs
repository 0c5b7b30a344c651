// A message over 65,535 bytes as nostr-tools writes it (the NIP-44 extended length prefix):
// a bare NIP-44 payload and a NIP-17 gift wrap of a kind 14 rumor, both from `sender` to
// `recipient`.  Prints {text_sha256, bytes, payload, wrap} as JSON.
//   node big.mjs <sender secret hex> <recipient pubkey hex> <characters>
import { v2 } from "nostr-tools/nip44";
import { wrapEvent } from "nostr-tools/nip59";
import { bytesToHex, hexToBytes } from "nostr-tools/utils";

const [secretHex, recipient, size] = process.argv.slice(2);
const secret = hexToBytes(secretHex);
const unit = "é big message ";  // multi-byte UTF-8 on purpose
const text = unit.repeat(Math.ceil(Number(size) / unit.length)).slice(0, Number(size));
const bytes = new TextEncoder().encode(text);
const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const payload = v2.encrypt(text, v2.utils.getConversationKey(secret, recipient));
const wrap = wrapEvent({ kind: 14, content: text, tags: [["p", recipient]] }, secret, recipient);
console.log(JSON.stringify({ text_sha256: bytesToHex(digest), bytes: bytes.length, payload, wrap }));
