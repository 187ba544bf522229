package stack_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/models/ddbmodels"
)

// storedCredential is the stored model's provider key: it must never be in
// clear in the table or in an answer.
const storedCredential = "sk-stack-stored-credential-4f1c"

// storedModel: a model added through the deployed admin function
// (store_model_in_db is on in the default config) is served by the
// deployed gateway, whose cold start reads the model store; its
// credential is sealed in the keys table and in no answer.
func (st *story) storedModel(t *testing.T) {
	r := st.admin(t, "POST", "/model/new", "", map[string]any{
		"model_name":     "stack-stored",
		"litellm_params": map[string]any{"model": "mock/gpt-4o-mini", "api_key": storedCredential, "mock_response": "from the stored model"},
		"model_info":     map[string]any{"id": "stack-stored-1"},
	})
	if r.status != 200 {
		t.Fatalf("/model/new: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), storedCredential) {
		t.Errorf("/model/new answered the credential: %s", r.body)
	}
	out, err := st.s.c.ddb.GetItem(ctx(t), &dynamodb.GetItemInput{
		TableName: aws.String(st.s.physical[tables.Keys.LogicalID]), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: ddbmodels.PK("stack-stored-1")}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("the stored model's item: %v, %v", out, err)
	}
	for name, v := range out.Item {
		if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok && strings.Contains(s.Value, storedCredential) {
			t.Errorf("attribute %s holds the credential in clear", name)
		}
	}
	body := eventBody(t, "gateway-chat.json")
	body["model"] = "stack-stored"
	r = streamed(t, st.fns["gateway"].invoke(t, urlEvent(t, "gateway-chat.json", "POST", "/v1/chat/completions", "", st.master, body)))
	if r.status != 200 || !strings.Contains(string(r.body), "from the stored model") {
		t.Fatalf("the gateway on the stored model: %d %s", r.status, truncate(r.body))
	}
	r = st.admin(t, "GET", "/model/info", "litellm_model_id=stack-stored-1", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"db_model":true`) || strings.Contains(string(r.body), storedCredential) {
		t.Errorf("/model/info: %d %s", r.status, truncate(r.body))
	}
}
