"""Files in private chats: NIP-17 file messages (kind 15) whose encrypted blobs live on
Blossom servers.  Out: a command's file goes to the controller's chat; in: a file the
controller sends is fetched, checked and kept for ``upload``."""
