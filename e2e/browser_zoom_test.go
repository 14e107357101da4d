package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

// TestBrowserZoom200: at 200% zoom on a 360 px phone (180 CSS pixels of width), the pages people use
// first fit the screen: nothing runs past its right edge, so that nothing needs a sideways scroll (WCAG
// 1.4.10, reflow).
func TestBrowserZoom200(t *testing.T) {
	artifacts := needBrowser(t)
	s := testserver.Start(t, testserver.Options{})
	if resp, out := publish(t, s, validRequest()); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %v", resp.StatusCode, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(phoneWidth/2, phoneHeight/2, chromedp.EmulateScale(2*phoneScale), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/pedir", "/ofrecer", "/gestionar", "/emergencias/eje-cafetero", "/privacidad"} {
		p.do(t, "open "+path, chromedp.Navigate(p.s.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		wide := run(p.ctx, t, "elements past the right edge", chromedp.Evaluate[[]string](`(() => {
			const w = document.documentElement.clientWidth, out = [];
			for (const el of document.querySelectorAll('body *')) {
				const r = el.getBoundingClientRect();
				if (r.width > 0 && r.right > w + 1 && el.offsetParent !== null && !el.closest('[hidden]')) {
					out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).split(' ')[0] : '') + ' ' + Math.round(r.right - w) + 'px');
				}
			}
			return out.slice(0, 8);
		})()`))
		if len(wide) > 0 {
			t.Errorf("%s at 200%%: past the right edge: %v", path, wide)
		}
		p.screenshot(t, "zoom200"+strings.ReplaceAll(path, "/", "-"))
	}
}
