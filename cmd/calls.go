package cmd

import (
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
)

// The shapes a tool call can arrive in (--from): see derive/spec.go.
const (
	fromArgs      = derive.FromArgs
	fromCall      = derive.FromCall
	fromMCP       = derive.FromMCP
	fromOpenAI    = derive.FromOpenAI
	fromAnthropic = derive.FromAnthropic
	fromAuto      = derive.FromAuto
)

func validFrom(s string) bool { return derive.ValidFrom(s) }

// callSpec is derive.Spec as the commands hold it, built from --from,
// --task, --tool, --scheme, --only, --omit and the config file's tools
// section (Factory.callSpec); the shapes, envelopes and selections it
// reads live in derive/spec.go.
type callSpec derive.Spec

// loadedCall is a call read from input.
type loadedCall = derive.Loaded

func (s *callSpec) d() *derive.Spec { return (*derive.Spec)(s) }

// forTool returns the spec as it applies to a call of tool (derive.Spec.ForTool).
func (s *callSpec) forTool(tool string) *callSpec { return (*callSpec)(s.d().ForTool(tool)) }

// fresh returns a copy of s with parsers of its own (derive.Spec.Copy).
func (s *callSpec) fresh() *callSpec { return (*callSpec)(s.d().Copy()) }

// selectArgs applies --only, then --omit (derive.Spec.SelectArgs).
func (s *callSpec) selectArgs(args canon.Node) (canon.Node, []int, error) {
	return s.d().SelectArgs(args)
}

// The envelope helpers other commands' faces read logged calls with.
var (
	str                = derive.StringAt
	isType             = derive.IsType
	isToolUse          = derive.IsToolUse
	openAICallName     = derive.OpenAICallName
	anthropicBlockName = derive.AnthropicBlockName
)
