// Kindling for OpenCode: sends the session's events to the installed `kindling` command.
// Written by `kindling init --agent opencode`; safe to commit: where `kindling` is not on the
// PATH every call fails quietly and OpenCode carries on. Nothing here reads the repository.
// Events: session.created (start context, added to the system prompt), chat.message (the
// prompt), tool.execute.after (each tool call), session.idle, session.deleted (closes the
// session's capsule). See docs/agents.md in Kindling.

const run = async ($, event, payload) => {
  try {
    const input = new Response(JSON.stringify({ hook_event_name: event, ...payload }))
    const out = await $`kindling hook --agent opencode ${event} < ${input}`.quiet().nothrow()
    return out.stdout.toString()
  } catch {
    return ""
  }
}

export const KindlingPlugin = async ({ $, directory }) => {
  const started = new Map() // sessionID -> start context
  const args = new Map() // callID -> tool arguments
  const text = (parts) =>
    (parts || []).filter((p) => p && p.type === "text").map((p) => p.text || "").join("\n")
  return {
    event: async ({ event }) => {
      const id = event?.properties?.info?.id || event?.properties?.sessionID
      if (!id) return
      if (event.type === "session.created") {
        const answer = await run($, "session.created", { session_id: id, cwd: directory })
        try {
          const context = JSON.parse(answer || "{}").context
          if (context) started.set(id, context)
        } catch {}
      } else if (event.type === "session.idle" || event.type === "session.deleted") {
        run($, event.type, { session_id: id, cwd: directory })
      }
    },
    "chat.message": async (input, output) => {
      const prompt = text(output?.parts)
      if (prompt) run($, "chat.message", { session_id: input.sessionID, cwd: directory, prompt })
    },
    "tool.execute.before": async (input, output) => {
      args.set(input.callID, output?.args || {})
    },
    "tool.execute.after": async (input, output) => {
      const given = args.get(input.callID) || input.args || {}
      args.delete(input.callID)
      run($, "tool.execute.after", {
        session_id: input.sessionID,
        cwd: directory,
        tool: input.tool,
        args: given,
        title: output?.title,
        output: output?.output,
        exit: output?.metadata?.exit,
      })
    },
    "experimental.chat.system.transform": async (input, output) => {
      const context = started.get(input?.sessionID)
      if (context && Array.isArray(output?.system)) {
        output.system.push(context)
        started.delete(input.sessionID)
      }
    },
  }
}
