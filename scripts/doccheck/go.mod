module github.com/bmckit/bmckit/scripts/doccheck

go 1.24.0
