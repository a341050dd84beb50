package cmd

// Transitional names: the commands not yet moved into cmd/X keep
// compiling against what moved into cmd/internal/*. This file goes when
// the last command has its own package.

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/ledgerflags"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/version"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type (
	IOStreams   = cli.IOStreams
	Settings    = settings.Settings
	InputError  = cli.InputError
	ExitError   = cli.ExitError
	OutputError = cli.OutputError
	exitCoder   = cli.ExitCoder
	hinter      = cli.Hinter
	codeError   = cli.CodeError
	jsonObject  = cli.JSONObject
	keyFormat   = derive.Format
	implProc    = proc.Impl
)

// Factory is cli.Factory with the methods the commands not yet moved call.
type Factory struct{ *cli.Factory }

// UsageError is the usage error of the files not yet moved, whose
// literals set its hint by its old field name.
type UsageError struct {
	Err  error
	hint string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
func (e *UsageError) ExitCode() int { return cli.ExitUsage }
func (e *UsageError) Hint() string  { return e.hint }

func usageErrorf(format string, args ...any) *UsageError {
	return &UsageError{Err: cli.Usagef(format, args...).Err}
}

// warning is a warning as the files not yet moved write it.
type warning struct{ msg, hint string }

func warningFrom(w derive.Warning) warning { return warning{msg: w.Msg, hint: w.Hint} }

const (
	exitOK          = cli.ExitOK
	exitNegative    = cli.ExitNegative
	exitUsage       = cli.ExitUsage
	exitBusy        = cli.ExitBusy
	exitUnknown     = cli.ExitUnknown
	exitRunFailed   = cli.ExitRunFailed
	exitCannotExec  = cli.ExitCannotExec
	exitNotFound    = cli.ExitNotFound
	exitSignalStart = cli.ExitSignalStart
	stdinName       = input.StdinName
)

var (
	exitCode        = cli.ExitCode
	shortPointer    = cli.ShortPointer
	plainText       = cli.PlainText
	printable       = cli.Printable
	escapeControls  = cli.EscapeControls
	diagLine        = cli.DiagLine
	usageFrom       = cli.UsageFrom
	rangeArgs       = cli.RangeArgs
	changed         = cli.Changed
	intsJSON        = cli.IntsJSON
	stringsJSON     = cli.StringsJSON
	sizeName        = cli.SizeName
	parseDays       = cli.ParseDays
	parseSize       = cli.ParseSize
	stamp           = cli.Stamp
	orList          = settings.OrList
	fileErr         = input.FileErr
	parseDoc        = input.ParseDoc
	guardFaults     = input.GuardFaults
	firstByte       = input.FirstByte
	rootIsArray     = input.RootIsArray
	blankLine       = input.BlankLine
	trimEOL         = input.TrimEOL
	readAllLimit    = input.ReadAllLimit
	tuneGC          = input.TuneGC
	checkPointers   = keyflags.CheckPointers
	pointerFlag     = keyflags.PointerFlag
	addCallFlags    = keyflags.AddCallFlags
	processTree     = proc.ProcessTree
	inheritedFiles  = proc.InheritedFiles
	pipeBuffered    = proc.PipeBuffered
	signalPid       = proc.SignalPid
	userSignals     = proc.UserSignals
	ownGroup        = proc.OwnGroup
	killGroup       = proc.KillGroup
	conformSignals  = proc.StopSignals
	implCommand     = proc.ImplCommand
	startError      = proc.StartError
	lockHeld        = proc.LockHeld
	formatNames     = derive.FormatNames
	fromNames       = derive.FromNames
	oneLine         = cli.OneLine
	commandLineOnly = settings.CommandLineOnly

	inTerminalForeground = proc.InTerminalForeground
)

func System() *IOStreams { return cli.System() }

func (f *Factory) readInput(name string) ([]byte, string, error) { return input.Read(f.Factory, name) }
func (f *Factory) readJSON(name string) ([]byte, string, error) {
	return input.ReadJSON(f.Factory, name)
}
func (f *Factory) readMapped(name string) ([]byte, string, func(), error) {
	return input.ReadMapped(f.Factory, name)
}
func (f *Factory) scheme() (canon.Scheme, error)     { return keyflags.Scheme(f.Factory) }
func (f *Factory) taskTool() (string, string, error) { return keyflags.TaskTool(f.Factory) }
func (f *Factory) keyFormat() (*keyFormat, error)    { return keyflags.Format(f.Factory) }
func (f *Factory) secret() ([]byte, error)           { return keyflags.Secret(f.Factory) }
func (f *Factory) printWarning(w warning)            { f.PrintWarning(derive.Warning{Msg: w.msg, Hint: w.hint}) }
func (f *Factory) printError(err error)              { f.PrintError(err) }
func (f *Factory) colorMode() string                 { return f.ColorMode() }
func (f *Factory) callSpec() (*callSpec, error) {
	s, err := keyflags.Spec(f.Factory)
	return (*callSpec)(s), err
}

func (s *callSpec) load(data []byte) (loadedCall, error) { return keyflags.Load(s.d(), data) }

func addKeyFormatFlags(fl *pflag.FlagSet) { keyflags.AddFormatFlags(fl) }

var _ = []any{io.EOF, os.Stdin, time.Second, (*cobra.Command)(nil)}

func (f *Factory) toolSelections() (map[string]derive.Selection, error) {
	return keyflags.ToolSelections(f.Factory)
}

const (
	batchChunkSize = input.ChunkSize
)

type (
	chunkReader   = input.ChunkReader
	tooLargeError = input.TooLargeError
)

func (f *Factory) noteTerminalStdin(fh *os.File) { input.NoteTerminalStdin(f.Factory, fh) }

var (
	isCommandLineOnly = settings.IsCommandLineOnly
	envName           = settings.EnvName
	isTerminal        = cli.IsTerminal
)

var (
	versionLine     = version.Line
	versionString   = cli.Version
	underlying      = cli.Underlying
	perToolSettings = settings.PerTool
)
var inputErr = cli.InputErr
var completeValues = cli.CompleteValues
var isHexKey = keyflags.IsHexKey

// keyOptions is what post, run and mcp take of key's options.
type keyOptions struct {
	f      *Factory
	Format *keyFormat
	Secret []byte
}

func (o *keyOptions) key(dst []byte, lc loadedCall) []byte {
	return keyflags.Key{Format: o.Format, Secret: o.Secret}.Append(dst, lc.Call)
}

var (
	shellQuote = cli.ShellQuote
	trimNL     = cli.TrimNL
)

// ledgerUnavailable is ledgerflags.Unavailable as the files not yet moved
// spell it.
type ledgerUnavailable struct {
	spec string
	err  error
}

func (e *ledgerUnavailable) Error() string {
	return (&ledgerflags.Unavailable{Spec: e.spec, Err: e.err}).Error()
}

func (e *ledgerUnavailable) Unwrap() error { return e.err }

type keyLocker = stores.KeyLocker

var (
	addLedgerFlag        = ledgerflags.AddFlag
	cliStoreError        = ledgerflags.StoreError
	openSQLiteExisting   = ledgerflags.OpenSQLiteExisting
	openPostgresExisting = ledgerflags.OpenPostgresExisting
	isLocked             = stores.IsLocked
	redactStoreURL       = stores.Redact
	holderAlive          = stores.HolderCheck
	holderName           = stores.Holder
)

func (f *Factory) defaultLedgerPath() (string, error) { return ledgerflags.DefaultPath(f.Factory) }
func (f *Factory) ledgerSpec() (string, error)        { return ledgerflags.Spec(f.Factory) }
func (f *Factory) storeOptions() stores.Options       { return ledgerflags.StoreOptions(f.Factory) }
func (f *Factory) openLedger(ctx context.Context, spec string) (ledger.Store, error) {
	return ledgerflags.Open(ctx, f.Factory, spec)
}

type (
	reconcileCmd = ledgerflags.Reconcile
	recorder     = ledgerflags.Recorder
	fileLocker   = ledgerflags.FileLocker
)

const (
	maxRecordedOutput = ledgerflags.MaxRecordedOutput
	maxKeptRequest    = ledgerflags.MaxKeptRequest
)

var (
	durationSetting    = ledgerflags.DurationSetting
	lookCommand        = ledgerflags.LookCommand
	newRecorder        = ledgerflags.NewRecorder
	stopSignals        = ledgerflags.StopSignals
	warnOutputsDropped = ledgerflags.WarnOutputsDropped
	notRecordedWhy     = ledgerflags.NotRecordedWhy
	lossLine           = ledgerflags.LossLine
	stepEnv            = ledgerflags.StepEnv
	keptRequest        = ledgerflags.KeptRequest
	describeDifference = ledgerflags.DescribeDifference
	recordNow          = ledgerflags.RecordNow
	addReconcileFlags  = ledgerflags.AddReconcileFlags
	requestArgs        = ledgerflags.RequestArgs
)

func (f *Factory) recoverPolicy(cmd *cobra.Command, tool string) (ledger.Policy, error) {
	return ledgerflags.RecoverPolicy(f.Factory, cmd, tool)
}

func (f *Factory) reconcileSettings(fl *pflag.FlagSet, tool string) (*reconcileCmd, error) {
	return ledgerflags.ReconcileSettings(f.Factory, fl, tool)
}

var withoutEnv = ledgerflags.WithoutEnv
