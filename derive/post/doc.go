// Package post is the HTTP exchange behind 'idemkey post': one request
// sent with its idempotency key and retried, with the same key and the
// same body bytes, while its outcome is unknown or the server asks for it.
//
// It follows curl where curl has a rule: its exit codes (Error.Code), its
// proxy variables (ProxyFor, with httpoxy's lower-case http_proxy), its
// redirects (-L, Redirect), its -H syntax (ParseHeaderLine, AddHeader) and
// its --write-out variables (ParseWriteOut). The retry rules are the IETF
// draft's (draft-ietf-httpapi-idempotency-key-header): 409 is "a request
// with this key is in flight", 422 "this key with another payload".
//
// The package touches the network and temporary files (a large response
// body is spooled to an unlinked file, see Spool), and no CLI package: the
// face (cmd) reads flags and settings, writes the messages (Events) and
// maps an *Error to the process's exit code.
//
// The API, in the order of an exchange:
//
//	ParseURL, CheckKeyHeader, ParseHeaderLine, CheckHeaderText, CheckLosses
//	AddHeader, RequestHead                  build and show the request
//	NewClient(Transport)                    the client: TLS, proxy, recording
//	Do(Exchange) *Result                    attempts, retries, redirects
//	(*WriteOut).Write                       curl's -w after the transfer
//	Redact, RedactURL, SecretHeader, ReplayHeader, HeadLines
package post
