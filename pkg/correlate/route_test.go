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
		"/42":                                     "/{id}",
		"/42/":                                    "/{id}/",
		"//42//x":                                 "//{id}//x",
		"/users/":                                 "/users/",
	} {
		if got := Route(in); got != want {
			t.Errorf("Route(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRouteWithoutIDsAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Route("/api/v2/items") }); n != 0 {
		t.Errorf("Route of a path without ids: %v allocations", n)
	}
}
