package spend_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/spend"
)

// TestEventOrganization: an event naming an organization is version 2,
// carries organization_id through its JSON form and adds its cost to the
// organization's record; a version 1 event (written before organizations)
// still decodes, naming none.
func TestEventOrganization(t *testing.T) {
	e := sample()
	e.Version, e.OrganizationID = spend.VersionOrg, "org-1"
	b := spend.Encode(&e)
	if !strings.Contains(string(b), `"v":2`) || !strings.Contains(string(b), `"organization_id":"org-1"`) {
		t.Fatalf("JSON form %s: want v 2 and organization_id", b)
	}
	got, err := spend.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.OrganizationID != "org-1" || got.Version != spend.VersionOrg {
		t.Fatalf("decoded %+v", got)
	}
	var refs []string
	for _, d := range got.Deltas() {
		refs = append(refs, fmt.Sprintf("%s=%d", d.Ref, d.Nanos))
	}
	if !slices.Contains(refs, "org#org-1=1234") {
		t.Errorf("deltas = %v, want the organization's", refs)
	}

	old := sample() // version 1, as a gateway before organizations wrote it
	b = spend.Encode(&old)
	if strings.Contains(string(b), "organization_id") {
		t.Fatalf("a version 1 event writes organization_id: %s", b)
	}
	got, err = spend.Decode(b)
	if err != nil || got.OrganizationID != "" || got.Version != spend.Version {
		t.Fatalf("version 1 event: %+v, %v", got, err)
	}
	for _, d := range got.Deltas() {
		if strings.HasPrefix(d.Ref.String(), "org#") {
			t.Errorf("a version 1 event adds to %s", d.Ref)
		}
	}
}
