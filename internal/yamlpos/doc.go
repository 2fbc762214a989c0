// Package yamlpos walks a YAML (or JSON) document and reports every
// mistake with its file, line, column and field path ("links[0].a.port"):
// typed scalars, mappings with YAML merge keys and aliases expanded
// (bounded, duplicate keys refused), unknown keys, and valid JSON that the
// YAML parser refuses, read by a JSON tokenizer that keeps positions.
//
// It knows nothing about topologies: package topo's file formats (hymn's
// YAML/JSON, MiniEdit's .mn) are built on it.
package yamlpos
