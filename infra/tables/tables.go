// Package tables is the single definition of Sluice's DynamoDB tables.
//
// template.yaml declares these tables, the tests create the very same tables
// in DynamoDB Local from this definition, and `go run ./infra/bootstrap`
// creates them on whatever AWS_ENDPOINT_URL points at. A test checks that
// template.yaml agrees with this file, so change both together.
package tables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BillingMode is the billing mode of every table: on-demand.
const BillingMode = types.BillingModePayPerRequest

// Attribute names shared by the table definitions and the stores.
const (
	PartitionKey = "pk"         // string partition key of every table
	SortKey      = "sk"         // string sort key (spend table only)
	TTLAttribute = "expires_at" // epoch seconds; DynamoDB deletes lazily, code never relies on it
)

// Table describes one DynamoDB table.
type Table struct {
	LogicalID    string // CloudFormation logical id in template.yaml
	EnvVar       string // environment variable carrying the physical table name to the functions
	DefaultName  string // physical name when EnvVar is unset (local runs, bootstrap)
	PartitionKey string // string attribute
	SortKey      string // string attribute; empty when the table has none
	TTLAttribute string // time-to-live attribute; empty when TTL is off
}

// The tables. Every key attribute is a string.
var (
	// Keys holds virtual keys and teams (pk "key#<sha256>" / "team#<id>").
	// Its TTL removes the expired forwarding markers of regenerated keys
	// ("moved#<sha256>"); nothing else there has expires_at.
	Keys = Table{
		LogicalID:    "KeysTable",
		EnvVar:       "KEYS_TABLE",
		DefaultName:  "sluice-keys",
		PartitionKey: PartitionKey,
		TTLAttribute: TTLAttribute,
	}
	// Counters holds rate-limit windows, deployment cooldowns, strict-budget
	// counters and stored Responses API responses ("resp#<id>", TTL).
	Counters = Table{
		LogicalID:    "CountersTable",
		EnvVar:       "COUNTERS_TABLE",
		DefaultName:  "sluice-counters",
		PartitionKey: PartitionKey,
		TTLAttribute: TTLAttribute,
	}
	// Spend holds spend logs (the spend pipeline).
	Spend = Table{
		LogicalID:    "SpendTable",
		EnvVar:       "SPEND_TABLE",
		DefaultName:  "sluice-spend",
		PartitionKey: PartitionKey,
		SortKey:      SortKey,
		TTLAttribute: TTLAttribute,
	}
)

// SpendQueueEnvVar names the environment variable carrying the spend queue URL.
const SpendQueueEnvVar = "SPEND_QUEUE_URL"

// All returns every table, in a fixed order.
func All() []Table { return []Table{Keys, Counters, Spend} }

// KeySchema returns the table's key schema.
func (t Table) KeySchema() []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(t.PartitionKey), KeyType: types.KeyTypeHash}}
	if t.SortKey != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(t.SortKey), KeyType: types.KeyTypeRange})
	}
	return ks
}

// AttributeDefinitions returns the definitions of the key attributes.
func (t Table) AttributeDefinitions() []types.AttributeDefinition {
	ad := []types.AttributeDefinition{{AttributeName: aws.String(t.PartitionKey), AttributeType: types.ScalarAttributeTypeS}}
	if t.SortKey != "" {
		ad = append(ad, types.AttributeDefinition{AttributeName: aws.String(t.SortKey), AttributeType: types.ScalarAttributeTypeS})
	}
	return ad
}

// CreateInput returns the CreateTable request for the table under name.
func (t Table) CreateInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		KeySchema:            t.KeySchema(),
		AttributeDefinitions: t.AttributeDefinitions(),
		BillingMode:          BillingMode,
	}
}

// Names are the physical names of the tables in one deployment (or one test).
type Names struct {
	Keys     string
	Counters string
	Spend    string
}

// DefaultNames returns every table's DefaultName.
func DefaultNames() Names {
	return Names{Keys: Keys.DefaultName, Counters: Counters.DefaultName, Spend: Spend.DefaultName}
}

// NamesFromEnv reads the EnvVar of each table of only (every table when
// only is empty) through lookup (pass os.Getenv from main), falling back to
// DefaultName when unset or empty; the other tables keep their DefaultName
// and their variables are not read.
func NamesFromEnv(lookup func(string) string, only ...Table) Names {
	if len(only) == 0 {
		only = All()
	}
	n := DefaultNames()
	for _, t := range only {
		v := lookup(t.EnvVar)
		if v == "" {
			continue
		}
		switch t.LogicalID {
		case Keys.LogicalID:
			n.Keys = v
		case Counters.LogicalID:
			n.Counters = v
		case Spend.LogicalID:
			n.Spend = v
		}
	}
	return n
}

// WithAffix returns the default names wrapped as prefix+name+suffix; tests use
// it to give each test its own tables.
func WithAffix(prefix, suffix string) Names {
	d := DefaultNames()
	return Names{Keys: prefix + d.Keys + suffix, Counters: prefix + d.Counters + suffix, Spend: prefix + d.Spend + suffix}
}

// Of returns the physical name of t.
func (n Names) Of(t Table) string {
	switch t.LogicalID {
	case Keys.LogicalID:
		return n.Keys
	case Counters.LogicalID:
		return n.Counters
	case Spend.LogicalID:
		return n.Spend
	}
	return ""
}

// API is the part of the DynamoDB client Create needs.
type API interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Create creates every table under its name in n, waits until each is
// active and turns on its TTL. It is idempotent: tables that already exist
// are kept as they are (their TTL is still turned on if it is off).
// ctx bounds the whole operation; give it a deadline.
func Create(ctx context.Context, api API, n Names) error {
	for _, t := range All() {
		if err := CreateOne(ctx, api, t, n.Of(t)); err != nil {
			return err
		}
	}
	return nil
}

// CreateOne creates one table as Create does.
func CreateOne(ctx context.Context, api API, t Table, name string) error {
	if name == "" {
		return fmt.Errorf("create table %s: empty table name", t.LogicalID)
	}
	_, err := api.CreateTable(ctx, t.CreateInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := waitActive(ctx, api, name); err != nil {
		return err
	}
	if t.TTLAttribute == "" {
		return nil
	}
	ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe ttl of %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on %s: %w", name, err)
	}
	return nil
}

// waitActive polls DescribeTable until the table is ACTIVE or ctx ends.
func waitActive(ctx context.Context, api API, name string) error {
	delay := 50 * time.Millisecond
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", name, err)
		}
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
