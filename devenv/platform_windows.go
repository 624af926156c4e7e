package devenv

import (
	"errors"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
)

// errPlatform: kfed builds for Windows for its other commands; the local
// federation needs process groups and SIGSTOP, which Windows lacks.
var errPlatform = errors.New("a local federation (kfed dev up) needs Linux or macOS; on Windows, run it in WSL 2")

func platformSupported() error { return errPlatform }

func freezeSignal(bool) (syscall.Signal, error) { return 0, errPlatform }

func installCRDs(*rest.Config, []*apiextensionsv1.CustomResourceDefinition, time.Duration) error {
	return errPlatform
}

func waitForCRDs(*rest.Config, []*apiextensionsv1.CustomResourceDefinition, time.Duration) error {
	return errPlatform
}
