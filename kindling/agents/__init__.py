"""What coding agents talk to.

- hooks, hook_command, payload, intake, records, digest, context, activity: Claude Code hook
  payloads -> observations, and the context given back;
- claude_settings: merging Kindling's hooks into `.claude/settings.json`;
- mcp_server (the process), mcp_stdio (the transport), mcp_tools (the tools, which load the
  MCP SDK), mcp_arguments, mcp_text: the MCP server over `kindling.Memory`.
"""
