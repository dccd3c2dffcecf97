// Package testenv holds what the integration, conformance and e2e suites
// share: reading CRDs, starting a real API server, writing a kubeconfig.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
)

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ReadCRD reads one CRD YAML file.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return nil, fmt.Errorf("decode CRD %s: %w", path, err)
	}
	return crd, nil
}

// ReadVendorHCO reads the vendor HyperConverged CRD keeping only v1: the
// file serves v1beta1 and v1 without a conversion webhook (OLM adds it), and
// with both served, fields would be pruned.
func ReadVendorHCO(vendorDir string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := ReadCRD(filepath.Join(vendorDir, "kubevirt", "hyperconverged-crd.yaml"))
	if err != nil {
		return nil, err
	}
	var v1 []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1" {
			v.Storage = true
			v1 = append(v1, v)
		}
	}
	crd.Spec.Versions, crd.Spec.Conversion = v1, nil
	return crd, nil
}

// Start runs a kube-apiserver and etcd (KUBEBUILDER_ASSETS) holding crds
// and returns the environment (Stop it), its config and a direct client.
func Start(crds []*apiextensionsv1.CustomResourceDefinition) (*envtest.Environment, *rest.Config, client.Client, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run 'make test' (it builds kube-apiserver and etcd with 'make envtest')")
	}
	// The API server keeps its certificates in a folder of our own (not one
	// envtest removes on Stop), so it can be stopped and started again with
	// the same identity: RestartAPIServer.
	certDir, err := os.MkdirTemp("", "autopilot-apiserver-")
	if err != nil {
		return nil, nil, nil, err
	}
	env := &envtest.Environment{CRDInstallOptions: envtest.CRDInstallOptions{CRDs: crds}, ErrorIfCRDPathMissing: true}
	env.ControlPlane.GetAPIServer().CertDir = certDir
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		_ = env.Stop()
		return nil, nil, nil, err
	}
	return env, cfg, c, nil
}

// StopAPIServer stops env's kube-apiserver process (SIGTERM, then SIGKILL
// if it has not exited after its stop timeout, as with open watches); etcd
// keeps running. It returns once the serving port is free again.
func StopAPIServer(env *envtest.Environment) error {
	api := env.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return err
	}
	addr := net.JoinHostPort(api.Address, api.Port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver port %s still busy: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartAPIServer starts env's kube-apiserver again on the same address,
// with the same certificates and data: a restart.
func StartAPIServer(env *envtest.Environment) error {
	return env.ControlPlane.GetAPIServer().Start()
}

// WriteKubeconfig writes cfg's server and credentials to path, for
// commands that take --kubeconfig.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// FreeAddr returns a loopback address with a port nothing listens on, for
// the endpoints of a manager or process a test starts. The port is free
// only until someone binds it, and the kernel may hand a released port out
// again: a port this process was given once is never given again, so two
// endpoints of the same test (a replica's metrics and console servers, or
// two replicas) never race for one port.
func FreeAddr() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := l.Addr().String()
		_ = l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("no loopback port this process has not handed out before")
}

var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}
