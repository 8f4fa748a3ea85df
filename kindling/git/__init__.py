"""Kindling and git: memory committed beside the code.

- merge: the pure three-way merge of entity files;
- setup: `.gitattributes` and the merge driver's registration;
- resolve: turning the unmerged stages of a conflicted merge into merged, staged files.
"""
