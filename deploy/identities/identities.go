// Package identities embeds the roles of the member identities kfed creates
// in the control plane (roles.yaml), so that kfed join applies the very
// manifest a reviewer reads.
package identities

import _ "embed"

// Roles is roles.yaml: the ClusterRoles kfed binds to each member's
// agents.
//
//go:embed roles.yaml
var Roles []byte
