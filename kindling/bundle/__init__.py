"""Export bundles: one JSON document holding a whole (or scoped) store.

- format: the bundle's constants, reading and checking a whole bundle;
- export: the streaming writer;
- importer: plan and apply an import into a store.
"""
