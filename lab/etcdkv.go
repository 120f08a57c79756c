package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// etcdKV talks to etcd's JSON gateway (/v3/kv/*), which etcd 3.4 serves on
// its client URL: enough to rewrite an object's stored metadata without
// linking the etcd client. The gateway carries bytes as base64, as
// encoding/json does for []byte.
type etcdKV struct {
	url    string
	client *http.Client
}

func newEtcdKV(url string) *etcdKV {
	return &etcdKV{url: url, client: &http.Client{Timeout: 10 * time.Second}}
}

type etcdKeyValue struct {
	Key         []byte `json:"key"`
	Value       []byte `json:"value"`
	ModRevision string `json:"mod_revision"`
}

func (e *etcdKV) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := e.client.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, res.Status, data)
	}
	return json.Unmarshal(data, resp)
}

// get returns key's value and mod revision; found is false for no such key.
func (e *etcdKV) get(ctx context.Context, key string) (value []byte, modRevision int64, found bool, err error) {
	var resp struct {
		KVs []etcdKeyValue `json:"kvs"`
	}
	if err := e.call(ctx, "/v3/kv/range", map[string]any{"key": []byte(key)}, &resp); err != nil {
		return nil, 0, false, err
	}
	if len(resp.KVs) == 0 {
		return nil, 0, false, nil
	}
	rev, err := strconv.ParseInt(resp.KVs[0].ModRevision, 10, 64)
	if err != nil {
		return nil, 0, false, fmt.Errorf("etcd mod_revision %q: %w", resp.KVs[0].ModRevision, err)
	}
	return resp.KVs[0].Value, rev, true, nil
}

// errChangedWhileRewritten: another writer (a controller: istiod writes a
// Service's status) changed the key between the read and the write.
var errChangedWhileRewritten = errors.New("changed while it was rewritten")

// putIfUnchanged writes value to key if key is still at modRevision.
func (e *etcdKV) putIfUnchanged(ctx context.Context, key string, value []byte, modRevision int64) error {
	req := map[string]any{
		"compare": []map[string]any{{
			"result": "EQUAL", "target": "MOD", "key": []byte(key), "mod_revision": strconv.FormatInt(modRevision, 10),
		}},
		"success": []map[string]any{{
			"request_put": map[string]any{"key": []byte(key), "value": value},
		}},
	}
	var resp struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := e.call(ctx, "/v3/kv/txn", req, &resp); err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd key %s: %w", key, errChangedWhileRewritten)
	}
	return nil
}
