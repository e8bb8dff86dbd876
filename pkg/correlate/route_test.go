package correlate

import "testing"

func TestRoute(t *testing.T) {
	for in, want := range map[string]string{
		"/":                  "/",
		"/users":             "/users",
		"/users/42":          "/users/{id}",
		"/users/42/orders/7": "/users/{id}/orders/{id}",
		"/o/123e4567-e89b-12d3-a456-426614174000": "/o/{id}",
		"/blob/deadbeef1234":                      "/blob/{id}",
		"/v1/traces":                              "/v1/traces",
		"/api/v2/items":                           "/api/v2/items",
		"*":                                       "*",
	} {
		if got := Route(in); got != want {
			t.Errorf("Route(%q) = %q, want %q", in, got, want)
		}
	}
}
