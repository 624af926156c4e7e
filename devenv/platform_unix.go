//go:build unix

package devenv

import (
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// platformSupported: the servers, process groups and signals devenv uses
// are Linux's and macOS's.
func platformSupported() error { return nil }

// freezeSignal is the signal that stops (freeze) or continues a process.
func freezeSignal(freeze bool) (syscall.Signal, error) {
	if freeze {
		return syscall.SIGSTOP, nil
	}
	return syscall.SIGCONT, nil
}

// installCRDs is envtest's installer, which does not build for Windows
// (controller-runtime v0.25.2 declares its process signaller twice there).
func installCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, maxTime time.Duration) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds, MaxTime: maxTime})
	return err
}

// waitForCRDs is envtest's wait for discovery to list every served version
// of crds.
func waitForCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, maxTime time.Duration) error {
	return envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{MaxTime: maxTime, PollInterval: 50 * time.Millisecond})
}
