package httpapi

import (
	"encoding/json"
	"slices"
	"testing"

	"flashsale/sharding/api"
)

// Every error code the answer table sends is one of api.Codes, the list the
// bench counts by, with the status api.Status gives it.
func TestAnswersUseTheSharedCodes(t *testing.T) {
	for a, spec := range answers {
		if spec.body == nil {
			continue
		}
		var v struct{ Error string }
		if err := json.Unmarshal(spec.body, &v); err != nil {
			t.Fatalf("answer %d body %s: %v", a, spec.body, err)
		}
		if !slices.Contains(api.Codes, v.Error) {
			t.Errorf("answer %d sends %q, which api.Codes lacks", a, v.Error)
		}
		if api.Status[v.Error] != spec.status {
			t.Errorf("answer %d sends %s with %d, api.Status says %d", a, v.Error, spec.status, api.Status[v.Error])
		}
	}
}
