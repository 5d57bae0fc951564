// Package layout holds no code: its test checks that the packages keep to
// their layers (ARCHITECTURE.md, "Packages"), so that the path of one row
// from file to stored outcome goes down the layers and no package reaches
// back up.
package layout
