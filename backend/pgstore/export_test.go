package pgstore

// CellKey is cellKey, for the tests of package pgstore_test.
var CellKey = cellKey
