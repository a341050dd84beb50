package mcp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// bundleCheck loads each module testdata/npm/mcp/bundle.mjs bundled both
// through testdata/mcp/sdk.mjs and from its package, and prints, for each,
// their named exports and whether sdk.mjs's came from the bundle (another
// module object). A bundle that is missing, or older than the packages
// installed, prints {"stale": true}.
const bundleCheck = `
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
const [sdkPath, npmDir] = process.argv.slice(1);
const dir = npmDir + "/node_modules/.idemkey-bundle/";
let manifest;
try {
  if (statSync(dir + "manifest.json").mtimeMs < statSync(npmDir + "/node_modules/.package-lock.json").mtimeMs) throw { code: "ENOENT" };
  manifest = JSON.parse(readFileSync(dir + "manifest.json", "utf8"));
} catch (e) {
  if (e.code !== "ENOENT") throw e;
  console.log(JSON.stringify({ stale: true }));
  process.exit(0);
}
const { load } = await import(pathToFileURL(sdkPath).href);
const require = createRequire(npmDir + "/package.json");
// A package's CommonJS build adds these two for interop; an ES module has neither.
const named = (m) => Object.keys(m).filter((k) => k !== "default" && k !== "__esModule").sort();
const modules = {};
for (const spec of Object.keys(manifest)) {
  const viaSDK = await load(spec);
  const pkg = await import(pathToFileURL(require.resolve(spec)).href);
  modules[spec] = { bundled: named(viaSDK), pkg: named(pkg), fromBundle: viaSDK !== pkg };
}
console.log(JSON.stringify({ modules }));
`

// loadCall is a test script's load of an npm module through sdk.mjs.
var loadCall = regexp.MustCompile(`\bload\("([^"]+)"\)`)

// TestSDKBundle: the test servers and clients load the SDK's modules from
// the bundle scripts/services.sh builds (testdata/npm/mcp/bundle.mjs), and
// each bundled module exports what its package does; every module the
// test scripts load is in it.
func TestSDKBundle(t *testing.T) {
	t.Parallel()
	node, repo := clitest.NodeMCP(t)
	out, err := exec.Command(node, "--input-type=module", "-e", bundleCheck,
		filepath.Join(repo, "testdata/mcp/sdk.mjs"), filepath.Join(repo, "testdata/npm/mcp")).Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Stale   bool
		Modules map[string]struct {
			Bundled, Pkg []string
			FromBundle   bool
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if got.Stale {
		clitest.Unavailable(t, "the SDK bundle is missing or older than the npm packages (bash scripts/services.sh builds it)")
	}
	for spec, m := range got.Modules {
		if !m.FromBundle {
			t.Errorf("%s: sdk.mjs loaded it from the package, not the bundle", spec)
		}
		if len(m.Bundled) == 0 || !slices.Equal(m.Bundled, m.Pkg) {
			t.Errorf("%s: the bundle exports %q, the package %q", spec, m.Bundled, m.Pkg)
		}
	}
	// Every module a test script loads (load("…") in testdata/mcp).
	scripts, _ := filepath.Glob(filepath.Join(repo, "testdata/mcp/*.mjs"))
	loads := 0
	for _, f := range scripts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range loadCall.FindAllSubmatch(b, -1) {
			loads++
			if _, ok := got.Modules[string(m[1])]; !ok {
				t.Errorf("%s loads %s, which is not in the bundle", filepath.Base(f), m[1])
			}
		}
	}
	if loads == 0 {
		t.Fatalf("no load(\"…\") in %q", scripts)
	}
}
