package main

// Object is a JSON or YAML mapping that keeps its keys in the order they
// were written. Envoy prints proto fields in field-number order and istiod
// prints syncz entries in a fixed order; a Go map would lose both. YAML
// manifests are printed with sorted keys, as kubectl does, so there the
// order only matters for readability of the source.
type Object []Field

// Field is one key of an Object.
type Field struct {
	Key   string
	Value any
}

// Set replaces key's value in place, or appends the key.
func (o *Object) Set(key string, value any) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = value
			return
		}
	}
	*o = append(*o, Field{key, value})
}

// Get returns key's value and whether the key is present.
func (o Object) Get(key string) (any, bool) {
	for _, f := range o {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}
