"""What coding agents talk to.

- hooks: Claude Code hook payloads -> observations, and the context given back;
- claude_settings: merging Kindling's hooks into `.claude/settings.json`;
- mcp_server: the MCP tools over `kindling.Memory`.
"""
