package settings

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

func TestNearest(t *testing.T) {
	known := map[string]Scope{"retry": TopLevel, "retry-delay": TopLevel, "key-header": TopLevel, "prefix": PerTool, "insecure": CommandLine}
	for in, want := range map[string]string{"retyr": "retry", "key_header": "key-header", "prefx": "prefix", "zzzzzz": "", "insecur": ""} {
		if got := nearest(in, known); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNamesScope: Names gives each setting of the tree the widest scope a
// command reads it in: per tool where a command marked it (ReadPerTool),
// from the command line only where every command marked it so
// (CommandLineOnly), and --config and --version from the command line.
func TestNamesScope(t *testing.T) {
	root := &cobra.Command{Use: "root"}
	root.PersistentFlags().String("config", "", "")
	root.PersistentFlags().String("color", "auto", "")
	root.Flags().Bool("version", false, "")
	a := &cobra.Command{Use: "a"}
	a.Flags().String("recover", "", "")
	a.Flags().String("url", "", "")
	a.Flags().String("lease", "", "")
	ReadPerTool(a.Flags(), "recover")
	CommandLineOnly(a.Flags(), "url", "lease")
	b := &cobra.Command{Use: "b"}
	b.Flags().String("recover", "", "")
	b.Flags().String("lease", "", "")
	b.Flags().String("url", "", "")
	CommandLineOnly(b.Flags(), "url", "recover")
	root.AddCommand(a, b)
	want := map[string]Scope{"config": CommandLine, "version": CommandLine, "color": TopLevel,
		"recover": PerTool, "url": CommandLine, "lease": TopLevel}
	if got := Names(root); !maps.Equal(got, want) {
		t.Errorf("Names: %v, want %v", got, want)
	}
}

// TestVetPerTool: a tools section's setting that no command reads per
// tool is warned about, naming those that are; one read per tool is not.
func TestVetPerTool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  deploy:\n    recover: retry\n    lease: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := readConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		known map[string]Scope
		want  []string
	}{
		{map[string]Scope{"recover": PerTool, "reconcile": PerTool, "lease": TopLevel},
			[]string{path + ":4: tools.deploy.lease: not read per tool, ignored (a tools section holds reconcile and recover)"}},
		{map[string]Scope{"recover": PerTool, "lease": TopLevel},
			[]string{path + ":4: tools.deploy.lease: not read per tool, ignored (a tools section holds recover)"}},
		{map[string]Scope{"recover": PerTool, "lease": PerTool}, nil},
	} {
		var warned []string
		if err := file.vet(c.known, func(msg string) { warned = append(warned, msg) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(warned, c.want) {
			t.Errorf("known %v: warned %q, want %q", c.known, warned, c.want)
		}
	}
}
