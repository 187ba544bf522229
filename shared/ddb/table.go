package ddb

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DefaultTimeout bounds one store call when its options give none.
const DefaultTimeout = 2 * time.Second

// Table is the table a store works on: its client (build it with
// NewClient), its name and the bound of one call, on top of the caller's
// deadline. A store embeds it.
type Table struct {
	Client  *dynamodb.Client
	Name    string
	Timeout time.Duration
}

// NewTable returns the Table named name; a timeout <= 0 is
// DefaultTimeout.
func NewTable(client *dynamodb.Client, name string, timeout time.Duration) Table {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return Table{Client: client, Name: name, Timeout: timeout}
}

// Call returns ctx bounded by the table's timeout for one call.
func (t Table) Call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.Timeout)
}
