package ssmparam_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/sluice-gw/sluice/shared/ssmparam"
)

type fakeSSM struct {
	params map[string]string
	err    error
	got    *ssm.GetParameterInput
	hadDL  bool
}

func (f *fakeSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.got = in
	_, f.hadDL = ctx.Deadline()
	if f.err != nil {
		return nil, f.err
	}
	v, ok := f.params[aws.ToString(in.Name)]
	if !ok {
		return nil, &types.ParameterNotFound{Message: aws.String("not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

func TestGet(t *testing.T) {
	tests := []struct {
		name    string
		param   string
		fake    *fakeSSM
		want    string
		wantErr string
	}{
		{"secure string", "/sluice/master-key", &fakeSSM{params: map[string]string{"/sluice/master-key": "sk-1"}}, "sk-1", ""},
		{"missing", "/nope", &fakeSSM{params: map[string]string{}}, "", "ssm parameter /nope"},
		{"empty value", "/empty", &fakeSSM{params: map[string]string{"/empty": ""}}, "", "empty value"},
		{"empty name", "", &fakeSSM{}, "", "empty name"},
		{"api error", "/x", &fakeSSM{err: errors.New("throttled")}, "", "throttled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ssmparam.Get(context.Background(), tt.fake, tt.param)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Get = %q, %v; want %q", got, err, tt.want)
			}
			if !aws.ToBool(tt.fake.got.WithDecryption) {
				t.Error("GetParameter without WithDecryption")
			}
			if !tt.fake.hadDL {
				t.Error("GetParameter called without a deadline")
			}
		})
	}
}
