// An independent NIP-46 remote signer for the tests: applesauce-signers' NostrConnectProvider,
// with nostr-tools' SimplePool (over the `ws` package) as its relay transport.
// Usage: node signer.mjs RELAY_URL USER_SECRET_HEX BUNKER_SECRET [same-key|own-key]
// Prints the bunker:// URI on one line, then serves until killed.
import { NostrConnectProvider, PrivateKeySigner } from "applesauce-signers";
import { SimplePool, useWebSocketImplementation } from "nostr-tools/pool";
import { Observable } from "rxjs";
import WebSocket from "ws";

useWebSocketImplementation(WebSocket);

const [relay, secretHex, bunkerSecret, mode = "own-key"] = process.argv.slice(2);
const pool = new SimplePool();
// The bunker URI is printed once the relay has the provider's subscription (its EOSE):
// requests are ephemeral events, and one sent before that would be lost.
let subscribed;
const ready = new Promise((resolve) => (subscribed = resolve));
const user = PrivateKeySigner.fromKey(secretHex);

const provider = new NostrConnectProvider({
  relays: [relay],
  upstream: user,
  signer: mode === "same-key" ? user : new PrivateKeySigner(),
  bunkerSecret,
  subscriptionMethod: (relays, filters) =>
    new Observable((observer) => {
      const sub = pool.subscribeMany(relays, filters[0], {
        onevent: (event) => observer.next(event),
        oneose: () => subscribed(),
      });
      return () => sub.close();
    }),
  publishMethod: (relays, event) => Promise.any(pool.publish(relays, event)),
});

await provider.start();
await ready;
console.log(await provider.getBunkerURI());
