// Package postgres opens a [sqlstore.Store] on PostgreSQL through
// github.com/jackc/pgx/v5, so that only programs that call [Open] link the
// driver.
//
// # Connection strings
//
// [Open] takes a DSN in either form pgx accepts
// ("postgres://user:pass@host:5432/db?sslmode=disable" or
// "host=... user=..."). Errors never repeat the password.
package postgres
