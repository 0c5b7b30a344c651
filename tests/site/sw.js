// A service worker that would see every request of its scope: the daemon must never let one run.
self.addEventListener("fetch", () => {});
