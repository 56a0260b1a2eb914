// Package toolbox is `flashctl toolbox`: flashctl as a long-running pod
// (deploy/k8s/base/ops.yaml). The pod holds the ops users' settings (Redis
// user ops over TLS, PostgreSQL, the Kafka user flashsale-ops) so that an
// operator runs any command in it with `kubectl exec deploy/flashsale-ops --
// flashctl ...`, and checks now and then that those settings still reach
// every store (Check), so that a rotated password or a missing certificate
// shows in its log and its readiness before the night it is needed.
package toolbox
