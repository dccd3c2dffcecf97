package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// errNoCluster names every way to point the binary at a cluster.
var errNoCluster = errors.New("no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG, " +
	"or run inside a pod (in-cluster config needs KUBERNETES_SERVICE_HOST and a service account token)")

// restConfig finds the cluster the way kubectl does, in this order:
// --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config. A file that was
// named but does not exist is an error that names it, never a fallback.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case kubeconfig != "":
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		rules.ExplicitPath = kubeconfig
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		found := false
		for _, p := range filepath.SplitList(os.Getenv(clientcmd.RecommendedConfigPathEnvVar)) {
			if _, err := os.Stat(p); err == nil {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("KUBECONFIG=%s: no such file", os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return cfg, nil
	default:
		if _, err := os.Stat(clientcmd.RecommendedHomeFile); err != nil {
			return nil, errNoCluster
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}
