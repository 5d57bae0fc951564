package tableschema

import "github.com/rowfate/rowfate/where"

// WhereType is the type package where reads a filter's values of a field
// of type typ as: a field's values are compared as the table stores them.
// A datetime, which where has no type for, compares as text.
func WhereType(typ string) where.Type {
	switch typ {
	case TypeInteger:
		return where.Integer
	case TypeNumber:
		return where.Number
	case TypeBoolean:
		return where.Boolean
	case TypeDate:
		return where.Date
	}
	return where.Text
}
