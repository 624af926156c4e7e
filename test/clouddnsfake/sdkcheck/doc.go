// Package sdkcheck has no code of its own: its tests drive clouddnsfake with
// the real google.golang.org/api Cloud DNS client, which is what kfed's
// Cloud DNS provider trusts it for. They live apart from clouddnsfake's own
// tests so that the fuzz targets' test binary does not link the client:
// coverage-guided fuzzing scans every linked package's counters on each
// execution, and the client made that several times slower.
package sdkcheck
