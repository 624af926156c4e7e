package devenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// An API server's first start on an empty etcd prefix writes its bootstrap
// objects, about 190 of them: the default RBAC roles and bindings, flow
// schemas and priority levels, priority classes and the built-in
// APIServices, each read, written and watched back. A bed starts one API
// server per cluster, and that part of each start is the same every time.
// A seed keeps those objects from one API server's first start, keyed by
// the binary and its flags, and writes them under an empty prefix before the
// next server starts there, which then reads and checks them instead (its
// bootstrap still reconciles whatever differs). Measured: 0.5 CPU-s less for
// the API server and 0.15 for etcd, a quarter of a quiet server's start.
//
// CRDs are the other dear part of a bed's start: their creation and the
// status updates that name and establish them each validate the whole
// schema. A CRD seed keeps a set of CRDs as the first bed to install them
// stored them, established, keyed by the binary, its flags and the CRDs'
// files, and writes them into a cluster's etcd prefix where none of them is
// yet; the running API server reads them from its watch and serves them.
//
// Nothing of a cluster's own is kept: not its namespaces (a kube-system UID
// names a cluster), Services, IP allocations, Leases or ConfigMaps (the
// client CA).

// seedFormat changes when what a seed holds, or how, does: older seeds are
// then ignored.
const seedFormat = "1"

// seededPrefixes are the kinds a seed keeps, as etcd key prefixes under a
// cluster's.
func seededPrefixes() []string {
	return []string{
		"clusterroles/", "clusterrolebindings/", "roles/", "rolebindings/",
		"flowschemas/", "prioritylevelconfigurations/", "priorityclasses/",
		"apiregistration.k8s.io/apiservices/",
	}
}

// seed is the bootstrap objects of an API server's first start.
type seed struct {
	Format string    `json:"format"`
	KVs    []seedKey `json:"kvs"`
}

type seedKey struct {
	Key   string `json:"key"` // under the cluster's prefix
	Value []byte `json:"value"`
}

// DefaultSeedDir is where `kfed dev up` and the tests keep seeds: the user's
// cache folder, "" when there is none.
func DefaultSeedDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kfed", "apiserver-seeds")
}

// seedPath is the file of a seed for this bed's kube-apiserver binary and
// flags and for what names the seed's content (kind, a hash of its inputs;
// "" for the bootstrap objects), "" without Options.SeedDir.
func (e *Env) seedPath(content string) (string, error) {
	if e.opts.SeedDir == "" {
		return "", nil
	}
	bin := filepath.Join(e.binDir, "kube-apiserver")
	st, err := os.Stat(bin)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	// The flags without what differs from bed to bed (its folder, etcd's
	// address) and from cluster to cluster (name, port, certificates).
	args := e.apiserverArgs(&Cluster{Member: Member{Name: "$NAME"}}, 0, "$CRT", "$KEY")
	shape := strings.NewReplacer(e.Dir, "$DIR", e.etcdURL, "$ETCD").Replace(strings.Join(args, "\n"))
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n%d\n%s\n%s", seedFormat, abs, st.Size(), st.ModTime().UnixNano(), shape, content)
	name := hex.EncodeToString(h.Sum(nil))[:16] + ".json"
	if content != "" {
		name = "crds-" + name
	}
	return filepath.Join(e.opts.SeedDir, name), nil
}

// loadSeed reads this bed's seed. A seed missing or unreadable is none: the
// bed's first API server then writes it.
func (e *Env) loadSeed() {
	path, err := e.seedPath("")
	if err != nil || path == "" {
		return
	}
	e.seedFile = path
	e.seed = readSeed(path)
}

// readSeed is the seed kept in path, nil when there is none to use.
func readSeed(path string) *seed {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var s seed
	if json.Unmarshal(data, &s) != nil || s.Format != seedFormat || len(s.KVs) == 0 {
		return nil
	}
	return &s
}

// etcdClient is a client of the bed's etcd, made on first use.
func (e *Env) etcdClient() (*clientv3.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.etcdCli != nil {
		return e.etcdCli, nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.etcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	e.etcdCli = cli
	return cli, nil
}

// plantSeed writes the seed under cluster c's prefix when the prefix is
// empty: a cluster whose API server ran before keeps what it has.
func (e *Env) plantSeed(ctx context.Context, c *Cluster) error {
	if e.seed == nil {
		return nil
	}
	cli, err := e.etcdClient()
	if err != nil {
		return err
	}
	prefix := "/kfed/" + c.Name + "/"
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading %s in etcd: %w", prefix, err)
	}
	if resp.Count > 0 {
		return nil
	}
	// etcd takes at most 128 operations in a transaction by default.
	const batch = 100
	for kvs := range slices.Chunk(e.seed.KVs, batch) {
		ops := make([]clientv3.Op, len(kvs))
		for i, kv := range kvs {
			ops[i] = clientv3.OpPut(prefix+kv.Key, string(kv.Value))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("seeding %s in etcd: %w", prefix, err)
		}
	}
	return nil
}

// keepSeed writes the seed of cluster c's API server, ready after its first
// start, when this bed found none.
func (e *Env) keepSeed(ctx context.Context, c *Cluster) error {
	if e.seed != nil || e.seedFile == "" {
		return nil
	}
	cli, err := e.etcdClient()
	if err != nil {
		return err
	}
	prefix := "/kfed/" + c.Name + "/"
	s := seed{Format: seedFormat}
	for _, kind := range seededPrefixes() {
		resp, err := cli.Get(ctx, prefix+kind, clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("reading %s%s in etcd: %w", prefix, kind, err)
		}
		for _, kv := range resp.Kvs {
			s.KVs = append(s.KVs, seedKey{Key: strings.TrimPrefix(string(kv.Key), prefix), Value: kv.Value})
		}
	}
	return keepSeedFile(e.seedFile, s)
}

// keepSeedFile writes s to path.
func keepSeedFile(path string, s seed) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic writes data to path through a new file renamed over it,
// so that beds starting side by side never read half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".seed-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		if errors.Is(err, fs.ErrPermission) {
			return nil // a read-only cache: beds start as they did without
		}
		return fmt.Errorf("keeping the API server's seed: %w", err)
	}
	return nil
}
