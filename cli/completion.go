package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/termsprawl/termsprawl/tools"
)

// Shell completion. Both binaries answer the shell's completion protocol
// themselves (kongplete over posener/complete: the shell runs the binary
// with COMP_LINE set, it prints the candidates), and `NAME completion
// SHELL` prints the few lines that make a shell do that.

// completionShells are the shells `completion` prints a script for.
var completionShells = []string{"bash", "zsh", "fish"}

type completionCmd struct {
	Shell string `arg:"" name:"SHELL" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// completionScript is the script for shell that makes it ask bin (the
// absolute path of this executable) for completions of name.
func completionScript(shell, name, bin string) (string, error) {
	q := shellQuoteArg(bin)
	switch shell {
	case "bash":
		return fmt.Sprintf("# %[1]s completion for bash: add to ~/.bashrc, or save as\n# ~/.local/share/bash-completion/completions/%[1]s\ncomplete -o default -C %[2]s %[1]s\n", name, q), nil
	case "zsh":
		return fmt.Sprintf("# %[1]s completion for zsh: add to ~/.zshrc: source <(%[1]s completion zsh)\nautoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C %[2]s %[1]s\n", name, q), nil
	case "fish":
		fn := "__complete_" + strings.ReplaceAll(name, "-", "_")
		return fmt.Sprintf(`# %[1]s completion for fish: save as ~/.config/fish/completions/%[1]s.fish
function %[3]s
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[2]s
end
complete -f -c %[1]s -a "(%[3]s)"
`, name, q, fn), nil
	}
	return "", fmt.Errorf("unknown shell %q: pick one of %s", shell, strings.Join(completionShells, ", "))
}

// printCompletion writes the completion script of name for shell.
func printCompletion(stdout, stderr io.Writer, name, shell string) int {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: completion: cannot find this executable: %v\n", name, err)
		return ExitNo
	}
	script, err := completionScript(shell, name, bin)
	if err != nil {
		return usageError(stderr, name, err, "")
	}
	fmt.Fprint(stdout, script)
	return ExitOK
}

// shellQuoteArg quotes s for a POSIX shell (and fish) when needed.
func shellQuoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]{}!#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// completeShell answers a completion request (COMP_LINE in the
// environment) and stops the program through kong's Exit; without one it
// does nothing.
func completeShell(parser *kong.Kong, opts []kongplete.Option) {
	if os.Getenv("COMP_LINE") == "" {
		return
	}
	kongplete.Complete(parser, append([]kongplete.Option{
		kongplete.WithErrorHandler(func(error) {}), // no noise in the user's prompt
	}, opts...)...)
}

// completionTimeout bounds a call made to complete a word: the prompt
// must not hang when termsprawl is slow or down.
var completionTimeout = 2 * time.Second

// humanPredictors complete node ids and names and dialog ids from the
// running termsprawl (nothing when it is not running).
func humanPredictors() []kongplete.Option {
	session := func() string {
		dir, err := tools.StateDir()
		if err != nil {
			return ""
		}
		return tools.OperatorSessionPath(dir)
	}
	call := func(op string, v any) bool {
		s := session()
		if s == "" {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		res := tools.Call(ctx, s, tools.Request{Operation: op}, tools.CallOptions{Timeout: completionTimeout})
		return res.OK && tools.DecodeValue(res.Value, v) == nil
	}
	nodes := complete.PredictFunc(func(complete.Args) []string {
		var l tools.NodeList
		if !call("terminal_list", &l) {
			return nil
		}
		return nodeWords(l.Terminals)
	})
	dialogs := complete.PredictFunc(func(complete.Args) []string {
		var l tools.DialogList
		if !call("dialog_list", &l) {
			return nil
		}
		var out []string
		for _, d := range l.Dialogs {
			out = append(out, d.ID)
		}
		return out
	})
	return []kongplete.Option{
		kongplete.WithPredictor("node", nodes),
		kongplete.WithPredictor("dialog", dialogs),
		kongplete.WithPredictor("mode", complete.PredictSet(tools.AnswerDeny, tools.AnswerAllow, tools.AnswerAlways)),
		kongplete.WithPredictor("dir", complete.PredictDirs("*")),
		kongplete.WithPredictor("command", complete.PredictFiles("*")),
		kongplete.WithPredictor("topic", complete.PredictSet(tools.GuideTopics()...)),
	}
}

// nodeWords are the words that name nodes: every id, and each name that
// names one node and is no id (a name shared by several nodes, or equal
// to another node's id, would name another node or none), each once.
func nodeWords(rows []tools.NodeInfo) []string {
	ids := map[string]bool{}
	names := map[string]int{}
	for _, n := range rows {
		ids[n.Terminal] = true
		names[n.Name]++
	}
	var out []string
	for _, n := range rows {
		out = append(out, n.Terminal)
	}
	for _, n := range rows {
		if n.Name != "" && !ids[n.Name] && names[n.Name] == 1 && !strings.ContainsAny(n.Name, " \t\n") {
			out = append(out, n.Name)
		}
	}
	return out
}

// ctlPredictors complete operation names and guide topics.
func ctlPredictors() []kongplete.Option {
	return []kongplete.Option{
		kongplete.WithPredictor("operation", complete.PredictSet(tools.OperationNames()...)),
		kongplete.WithPredictor("file", complete.PredictFiles("*.json")),
		kongplete.WithPredictor("topic", complete.PredictSet(tools.GuideTopics()...)),
	}
}
