package ddb

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is one DynamoDB item as the SDK holds it.
type Item = map[string]types.AttributeValue

// S is a string attribute value.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is an integer number attribute value.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// F is a float number attribute value, in the shortest decimal that reads
// back as v.
func F(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

// Bool is a boolean attribute value.
func Bool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// List is a list of string attribute values.
func List(vs []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(vs))
	for i, v := range vs {
		l[i] = S(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// PK is the key of an item in a table whose only key is "pk".
func PK(pk string) Item { return Item{"pk": S(pk)} }

// String reads a string attribute; "" when absent or not a string.
func String(it Item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// Int reads an integer number attribute; ok is false when it is absent, not
// a number or not an int64.
func Int(it Item, name string) (v int64, ok bool) {
	n, isN := it[name].(*types.AttributeValueMemberN)
	if !isN {
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	return i, err == nil
}

// Int0 reads an integer number attribute, 0 when Int would not find one.
func Int0(it Item, name string) int64 {
	v, _ := Int(it, name)
	return v
}

// Float reads a number attribute as a float64; ok is false when it is
// absent or not a number.
func Float(it Item, name string) (v float64, ok bool) {
	n, isN := it[name].(*types.AttributeValueMemberN)
	if !isN {
		return 0, false
	}
	x, err := strconv.ParseFloat(n.Value, 64)
	return x, err == nil
}

// BoolOf reads a boolean attribute; false when absent.
func BoolOf(it Item, name string) bool {
	v, ok := it[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

// Strings reads a list of strings; nil when absent or empty. Elements that
// are not strings are skipped.
func Strings(it Item, name string) []string {
	v, ok := it[name].(*types.AttributeValueMemberL)
	if !ok || len(v.Value) == 0 {
		return nil
	}
	out := make([]string, 0, len(v.Value))
	for _, e := range v.Value {
		if sv, ok := e.(*types.AttributeValueMemberS); ok {
			out = append(out, sv.Value)
		}
	}
	return out
}

// PKSK is the key of an item in a table whose key is "pk" and "sk" (the
// spend table).
func PKSK(pk, sk string) Item { return Item{"pk": S(pk), "sk": S(sk)} }
