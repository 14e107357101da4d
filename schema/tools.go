package schema

import "strings"

// MCPTool is one registered MCP tool as the documents list it (the MCP instructions, the OpenAPI
// description of /mcp, discovery, llms.txt and the integration guide): each list is generated from the
// tools the MCP server registers, so none can miss one.
type MCPTool struct {
	Name, Title string
	// Summary says in one line, in Spanish plain text, what the tool does.
	Summary string
	// Capability is the discovery capability the tool provides (English snake_case).
	Capability string
	// Publishes is true for a tool that counts against the publishing limit, ShowsPhone for a read-only
	// one that counts against the limit of view=detail.
	Publishes, ShowsPhone bool
}

// JoinES joins words as Spanish lists them: "a", "a y b", "a, b y c".
func JoinES(words []string) string { return joinES(words, " y ") }

// JoinOrES joins words as Spanish offers a choice: «a, b o c».
func JoinOrES(words []string) string { return joinES(words, " o ") }

func joinES(words []string, last string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + last + words[len(words)-1]
}

// ToolNames are the names of tools, in order.
func ToolNames(tools []MCPTool, keep func(MCPTool) bool) []string {
	var out []string
	for _, t := range tools {
		if keep == nil || keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// mcpLimits says which tool calls count against which rate limit.
func mcpLimits(tools []MCPTool) string {
	publish := ToolNames(tools, func(t MCPTool) bool { return t.Publishes })
	free := ToolNames(tools, func(t MCPTool) bool { return !t.Publishes && !t.ShowsPhone })
	phone := ToolNames(tools, func(t MCPTool) bool { return t.ShowsPhone })
	s := "Solo las llamadas tools/call a " + JoinES(publish) + " cuentan para el límite de POST " + HelpPath + "; " +
		JoinES(append([]string{"initialize", "tools/list", "ping"}, free...)) + " no lo gastan"
	switch len(phone) {
	case 0:
	case 1:
		s += "; " + phone[0] + ", que muestra un teléfono, cuenta para el límite de view=detail"
	default:
		s += "; " + JoinES(phone) + ", que muestran un teléfono, cuentan para el límite de view=detail"
	}
	return s + "."
}
