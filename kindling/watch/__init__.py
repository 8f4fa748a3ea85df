"""`kindling watch`: keep the index current as files change.

- source: the change source (watchfiles) and the git HEAD tracker;
- watcher: the loop that applies changes to the index and publishes its state to readers.
"""
