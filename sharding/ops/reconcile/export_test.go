package reconcile

// CountKinds is countKinds, for the external tests.
var CountKinds = countKinds
