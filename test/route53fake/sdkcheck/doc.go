// Package sdkcheck has no code of its own: its tests drive route53fake with
// the real aws-sdk-go-v2 Route53 client, which is what kfed's Route53
// provider trusts it for. They live apart from route53fake's own tests so
// that the fuzz targets' test binary does not link the SDK: coverage-guided
// fuzzing scans every linked package's counters on each execution, and the
// SDK made that several times slower.
package sdkcheck
