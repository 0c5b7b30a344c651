// The phone's side of a NIP-17 chat with the daemon, on nostr-tools and WebCrypto alone, as a
// chat app does it: gift-wrapped messages out, the daemon's rumors in, and a file message
// (kind 15) opened by fetching its URL, checking x, decrypting with AES-GCM, checking ox.
// Shared by the tests' phone (phone.mjs) and the bench's (bench/phone.mjs).
import { wrapEvent, unwrapEvent } from "nostr-tools/nip59";
import { getPublicKey } from "nostr-tools/pure";
import { SimplePool, useWebSocketImplementation } from "nostr-tools/pool";
import { hexToBytes, bytesToHex } from "nostr-tools/utils";
import WebSocket from "ws";

useWebSocketImplementation(WebSocket);

export const tag = (rumor, name) => rumor.tags.find((t) => t[0] === name)?.[1];
export const sha256 = async (bytes) =>
  bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

// The file a kind 15 names: {data, blob (its size on the wire), type, dim, size, e}.
export async function openFile(rumor) {
  const blob = new Uint8Array(await (await fetch(rumor.content)).arrayBuffer());
  if ((await sha256(blob)) !== tag(rumor, "x")) throw new Error("x does not match the blob");
  if (tag(rumor, "encryption-algorithm") !== "aes-gcm") throw new Error("not aes-gcm");
  const key = await crypto.subtle.importKey(
    "raw", hexToBytes(tag(rumor, "decryption-key")), "AES-GCM", false, ["decrypt"],
  );
  const iv = hexToBytes(tag(rumor, "decryption-nonce"));
  const data = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, blob));
  if ((await sha256(data)) !== tag(rumor, "ox")) throw new Error("ox does not match the file");
  return {
    data, blob: blob.length, type: tag(rumor, "file-type"), dim: tag(rumor, "dim"),
    size: tag(rumor, "size"), e: tag(rumor, "e"),
  };
}

// A chat with one daemon: `onRumor(rumor, wireBytes)` gets each of the daemon's messages.
export class Chat {
  constructor(relay, secretHex, daemon) {
    this.relay = relay;
    this.secret = hexToBytes(secretHex);
    this.me = getPublicKey(this.secret);
    this.daemon = daemon;
    this.pool = new SimplePool();
    this.seen = new Set();
    this.lastSent = 0;
  }

  // Subscribe (gift wraps are back-dated, so look back) and resolve at EOSE.
  listen(onRumor, onError) {
    const since = Math.floor(Date.now() / 1000) - 3 * 24 * 3600;
    return new Promise((eose) => {
      this.pool.subscribeMany([this.relay], { kinds: [1059], "#p": [this.me], since }, {
        onevent: (wrap) => {
          if (this.seen.has(wrap.id)) return;
          this.seen.add(wrap.id);
          const rumor = unwrapEvent(wrap, this.secret);
          if (rumor.pubkey !== this.daemon) return;
          Promise.resolve(onRumor(rumor, JSON.stringify(wrap).length)).catch(onError);
        },
        oneose: () => eose(),
      });
    });
  }

  // Send `text` as a kind 14; each in its own second or later, so that the same text twice
  // is two messages (a rumor's id hashes its created_at), not a replay.
  async send(text) {
    const created_at = Math.max(Math.floor(Date.now() / 1000), this.lastSent + 1);
    this.lastSent = created_at;
    const rumor = { kind: 14, content: text, tags: [["p", this.daemon]], created_at };
    await Promise.any(this.pool.publish([this.relay], wrapEvent(rumor, this.secret, this.daemon)));
  }

  close() {
    this.pool.close([this.relay]);
  }
}
