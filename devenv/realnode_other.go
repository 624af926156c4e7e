//go:build !linux

package devenv

import (
	"context"
	"errors"
	"time"
)

// RealNode is a real node of one member; real nodes need Linux.
type RealNode struct {
	Name, Cluster, NodeIP, Netns string
	Started                      time.Duration
}

// StartRealNode fails: a real node needs Linux's namespaces and cgroups.
func (e *Env) StartRealNode(context.Context, *Cluster, int, RealNodeOptions, KfedZone) (*RealNode, error) {
	return nil, errors.New("devenv: real nodes need Linux")
}

// Expose fails: there is no node.
func (n *RealNode) Expose(string) (string, error) {
	return "", errors.New("devenv: real nodes need Linux")
}

// Stop does nothing.
func (n *RealNode) Stop() {}

// Usage is zero.
func (n *RealNode) Usage() (int64, time.Duration, error) { return 0, 0, nil }
