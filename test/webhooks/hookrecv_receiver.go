//go:build ignore

// A webhook receiver written from the interface spec's "Events" section alone (branch hookrecv),
// in Go with the standard library: net/http, crypto/hmac, crypto/sha256. It verifies each
// delivery (raw body, t within 300 s, HMAC-SHA256 hex over "t.body", hmac.Equal), answers 401
// when that fails, dedupes on X-Service-Webhook-Id and records every disagreement with the spec's
// header and body tables. The same control protocol and report lines as hookrecv_receiver.py
// (secrets and answers; no hold or redirect). Run: go run hookrecv_receiver.go
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	mu        sync.Mutex
	secrets   []string
	answers   []int
	processed = map[string]bool{}
	out       = json.NewEncoder(os.Stdout)
	uuidRe    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hex64     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	types     = map[string]bool{"comms.sent": true, "comms.failed": true, "comms.skipped": true, "comms.delivered": true, "comms.opened": true,
		"comms.bounced": true, "comms.dropped": true, "comms.spam_reported": true, "comms.unsubscribed": true, "comms.test": true}
)

func report(entry map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	_ = out.Encode(entry)
}

// parseSignature reads "t=<unix>,v1=<hex>[,v1=...]"; unknown versions are ignored.
func parseSignature(header string) (int64, []string, bool) {
	var t int64 = -1
	var v1 []string
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, nil, false
		}
		switch key {
		case "t":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return 0, nil, false
			}
			t = n
		case "v1":
			v1 = append(v1, value)
		}
	}
	return t, v1, t >= 0 && len(v1) > 0
}

func signedWith(secret string, t int64, body []byte, digests []string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t, 10) + "."))
	mac.Write(body)
	expected := []byte(hex.EncodeToString(mac.Sum(nil)))
	for _, d := range digests {
		if hmac.Equal(expected, []byte(d)) {
			return true
		}
	}
	return false
}

func problemsOf(h http.Header, body []byte) []string {
	problems := []string{}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		problems = append(problems, fmt.Sprintf("Content-Type is %q", h.Get("Content-Type")))
	}
	var doc struct {
		ID        *string                    `json:"id"`
		Type      *string                    `json:"type"`
		CreatedAt *string                    `json:"createdAt"`
		Data      map[string]json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil {
		return append(problems, "body is not JSON: "+err.Error())
	}
	if doc.ID == nil || !uuidRe.MatchString(*doc.ID) || *doc.ID != h.Get("X-Service-Webhook-Id") {
		problems = append(problems, "id is not the X-Service-Webhook-Id uuid")
	}
	if doc.Type == nil || !types[*doc.Type] || *doc.Type != h.Get("X-Service-Event") {
		problems = append(problems, "type is not a spec event type equal to X-Service-Event")
	}
	if doc.CreatedAt == nil {
		problems = append(problems, "createdAt missing")
	} else if _, err := time.Parse(time.RFC3339Nano, *doc.CreatedAt); err != nil {
		problems = append(problems, "createdAt is not ISO 8601: "+*doc.CreatedAt)
	}
	if doc.Data == nil {
		return append(problems, "data is not an object")
	}
	str := func(field string) (string, bool) {
		var s string
		raw, ok := doc.Data[field]
		if !ok || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	for _, field := range []string{"attendeeId", "templateId", "attendeeInvitationId"} {
		if s, ok := str(field); !ok || !uuidRe.MatchString(s) {
			problems = append(problems, "data."+field+" is not a GUID string")
		}
	}
	status, ok := str("status")
	if !ok || (doc.Type != nil && *doc.Type != "comms."+status) {
		problems = append(problems, "data.status is not the type's status")
	}
	raw, present := doc.Data["error"]
	errText, isString := str("error")
	switch {
	case !present:
		problems = append(problems, "data.error missing")
	case string(raw) != "null" && !isString:
		problems = append(problems, "data.error is neither string nor null")
	case (status == "failed" || status == "dropped") && errText == "":
		problems = append(problems, "data.error not set for "+status)
	case status != "failed" && status != "dropped" && string(raw) != "null":
		problems = append(problems, "data.error set for "+status)
	}
	if _, present := doc.Data["correlationId"]; present {
		if _, ok := str("correlationId"); !ok {
			problems = append(problems, "data.correlationId is not a string")
		}
	}
	return problems
}

func hook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/_control" {
		var command struct {
			Secrets []string `json:"secrets"`
			Answers []int    `json:"answers"`
		}
		_ = json.Unmarshal(body, &command)
		mu.Lock()
		if command.Secrets != nil {
			secrets = command.Secrets
		}
		if command.Answers != nil {
			answers = command.Answers
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	received := time.Now()
	mu.Lock()
	known := append([]string(nil), secrets...)
	mu.Unlock()
	id := r.Header.Get("X-Service-Webhook-Id")
	entry := map[string]any{"receivedAt": float64(received.UnixNano()) / 1e9, "webhookId": id, "event": r.Header.Get("X-Service-Event"),
		"body": string(body), "problems": []string{}, "duplicate": false, "signer": nil, "t": nil}
	verdict := "ok"
	t, digests, ok := parseSignature(r.Header.Get("X-Service-Signature"))
	if ok {
		entry["t"] = t
		for i, s := range known {
			if signedWith(s, t, body, digests) {
				entry["signer"] = i
				break
			}
		}
	}
	switch {
	case !ok:
		verdict = "unreadable signature header"
	case !hex64.MatchString(digests[0]):
		verdict = "v1 is not 64 lowercase hex characters"
	case math.Abs(float64(received.Unix()-t)) > 300:
		verdict = "timestamp outside 300 s"
	case entry["signer"] != 0:
		verdict = "signature mismatch"
	}
	entry["verdict"] = verdict
	if verdict != "ok" {
		entry["answered"] = 401
		report(entry)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	mu.Lock()
	duplicate := processed[id]
	status := 200
	if !duplicate && len(answers) > 0 {
		status, answers = answers[0], answers[1:]
	}
	if status >= 200 && status < 300 {
		processed[id] = true
	}
	mu.Unlock()
	entry["duplicate"] = duplicate
	entry["problems"] = problemsOf(r.Header, body)
	entry["answered"] = status
	report(entry)
	w.WriteHeader(status)
}

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	report(map[string]any{"listening": listener.Addr().(*net.TCPAddr).Port})
	panic(http.Serve(listener, http.HandlerFunc(hook)))
}
