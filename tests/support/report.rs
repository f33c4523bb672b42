//! Reading the compatibility report (`btfgen-report/3`, docs/batch-and-report.md, "Compatibility report") the way
//! a consumer does: each kernel with its program set's `verdicts` and `programs`, every index
//! replaced by the record it names, which is `/2`'s shape. Checks on the way that the report
//! stores each distinct record once.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

/// The report's format tag.
pub const FORMAT: &str = "btfgen-report/3";

/// Every element of `report[table]`, checked to be distinct.
fn table<'a>(report: &'a Value, table: &str) -> &'a [Value] {
    let items = report[table]
        .as_array()
        .unwrap_or_else(|| panic!("no {table}"));
    let distinct: BTreeSet<String> = items.iter().map(Value::to_string).collect();
    assert_eq!(
        distinct.len(),
        items.len(),
        "{table}: a record stored twice"
    );
    items
}

/// `report` with its kernels expanded: `kernels[].verdicts` and `kernels[].programs` (each
/// program with its `relocations` records) as `btfgen-report/2` had them.
pub fn expand(report: &Value) -> Value {
    assert_eq!(report["format"], FORMAT);
    let relocations = table(report, "relocations");
    let programs = table(report, "programs");
    let sets = table(report, "program_sets");
    let index = |v: &Value| v.as_u64().unwrap() as usize;
    let kernels: Vec<Value> = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let set = &sets[index(&k["program_set"])];
            let cells: Vec<Value> = set["programs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let mut cell = programs[index(p)].clone();
                    let records: Vec<Value> = cell["relocations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| relocations[index(r)].clone())
                        .collect();
                    cell["relocations"] = json!(records);
                    cell
                })
                .collect();
            let mut kernel = k.clone();
            let fields = kernel.as_object_mut().unwrap();
            fields.remove("program_set");
            fields.insert("verdicts".into(), set["verdicts"].clone());
            fields.insert("programs".into(), json!(cells));
            kernel
        })
        .collect();
    let mut expanded = report.clone();
    expanded["kernels"] = json!(kernels);
    expanded
}

/// The report at `path` (JSON), [`expand`]ed.
pub fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    expand(&serde_json::from_str(&text).unwrap())
}
