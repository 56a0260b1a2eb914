// Package manifests holds the offline validation of the production deployment files: the
// Kubernetes manifests under deploy/k8s (kustomize base and the dev and prod overlays), the
// compose file under deploy/compose, deploy/Dockerfile, and the Grafana dashboard and Prometheus
// alert rules under deploy/observability.
//
// Docker and a Kubernetes API server are not available where the tests run, so the tests do what
// they can without them: every Kubernetes object that kustomize builds is decoded strictly into
// its k8s.io/api type (an unknown or misspelt field fails), the Strimzi and CloudNativePG custom
// resources are decoded strictly into structs of the fields this project uses, the compose file
// is loaded and validated by compose-go, the Dockerfile's build commands are compared with the
// Makefile's build target, and every metric the dashboard and the alert rules name is checked
// against the list of metrics the binaries export, which an integration test compares with a
// live /metrics scrape of the real gateway and writer.
//
// The package has no non-test code besides this comment.
package manifests
